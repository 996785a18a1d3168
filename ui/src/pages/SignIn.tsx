// SignIn.tsx — paste a token (what `sextant token` prints), or, on a local demo server
// with auth.dev_sign_in, sign in as a role with one click.
import {useEffect, useState} from 'preact/hooks';
import {ApiError, describeError} from '../lib/api';
import {devSignIn, devSignInOptions, signIn, signInWithoutToken} from '../lib/session';
import type {DevSignIn} from '../lib/types';
import {useTitle} from '../lib/hooks';

export function SignIn({ended}: {ended: string | null}) {
  useTitle('Sign in');
  const [tokenText, setTokenText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [dev, setDev] = useState<DevSignIn | null | 'unknown'>('unknown');

  useEffect(() => {
    devSignInOptions()
      .then(setDev)
      .catch(() => setDev(null));
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const t = tokenText.trim().replace(/^Bearer\s+/i, '');
    setBusy(true);
    setError(null);
    try {
      // Without a token: only a server with auth.enabled false lets us in.
      if (t) await signIn(t);
      else await signInWithoutToken();
    } catch (err) {
      if (!t && err instanceof ApiError && err.status === 401) setError('Paste a token first: this server requires one.');
      else setError(`The token was refused: ${describeError(err)}`);
    } finally {
      setBusy(false);
    }
  };

  const quick = async (role: string) => {
    setBusy(true);
    setError(null);
    try {
      await devSignIn(role);
    } catch (err) {
      setError(`Dev sign-in failed: ${describeError(err)}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <div class="signin-card">
        <h1>Sextant</h1>
        <p class="muted">Sign in to the control plane.</p>
        {ended && (
          <p class="notice notice-warn" role="alert">
            You were signed out: {ended}.
          </p>
        )}
        <form onSubmit={submit}>
          <label class="field">
            <span class="field-label">Bearer token</span>
            <textarea
              name="token"
              rows={4}
              spellcheck={false}
              autoComplete="off"
              placeholder="eyJhbGciOi…"
              value={tokenText}
              onInput={(e) => setTokenText(e.currentTarget.value)}
            />
            <span class="field-hint">
              An operator mints one with <code>sextant token --user you@example.com --role operator</code>. It is kept in this tab
              only.
            </span>
          </label>
          <button type="submit" class="btn btn-primary" disabled={busy}>
            Sign in
          </button>
        </form>
        {dev && dev !== 'unknown' && (
          <div class="dev-signin" data-testid="dev-sign-in">
            <h2>Local demo</h2>
            <p class="muted small">
              This server has <code>auth.dev_sign_in</code> on: sign in as any role for {Math.round(dev.ttl_seconds / 60)} minutes.
              Never turn it on in production.
            </p>
            <div class="btn-row">
              {dev.roles.map((r) => (
                <button key={r} type="button" class="btn" disabled={busy} onClick={() => quick(r)}>
                  Sign in as {r}
                </button>
              ))}
            </div>
          </div>
        )}
        {error && (
          <p class="notice notice-bad" role="alert">
            {error}
          </p>
        )}
      </div>
    </main>
  );
}
