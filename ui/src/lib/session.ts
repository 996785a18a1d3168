// session.ts — who is signed in: the bearer token (sessionStorage, so it ends with the
// tab), the caller as GET /api/v1/whoami describes it, and what the role may do.
//
// Buttons that change something exist only when the caller's permissions (from whoami,
// computed by the server from its RBAC policy) include the action; the server checks
// again on every request, so this only spares users buttons that would answer 403.
import {ApiError, configureApi, fetchOp, request} from './api';
import {createStore} from './store';
import type {DevSignIn, DevSignInToken, Whoami} from './types';

/** The local demo's sign-in: served outside /api/v1's route table (and so outside the
 * OpenAPI paths), its answers described by the document's DevSignIn* schemas. */
const DEV_SIGN_IN = '/api/v1/auth/dev-sign-in';

const TOKEN_KEY = 'sextant.token';

export interface Session {
  me: Whoami | null;
  /** Why the last session ended (token expired, ...), shown on the sign-in page. */
  ended: string | null;
}

export const session = createStore<Session>({me: null, ended: null});

export function token(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function storeToken(t: string | null) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the session lasts as long as the page */
  }
}

configureApi(token, (e: ApiError) => {
  // Any 401: the token is gone or no longer good; back to sign-in, saying why.
  if (session.get().me || token()) {
    storeToken(null);
    session.set({me: null, ended: e.message});
  }
});

/** Signs in with a token: keeps it when whoami accepts it. Throws the refusal. */
export async function signIn(t: string): Promise<Whoami> {
  const me = await fetchOp('whoami', {}, {headers: {Authorization: `Bearer ${t}`}, session: false});
  storeToken(t);
  session.set({me, ended: null});
  return me;
}

/** Restores the session of the token in sessionStorage. Returns false when signing in
 * is needed. Without a token nothing is asked (every refused call is an audit row). */
export async function resume(): Promise<boolean> {
  if (!token()) return false;
  try {
    const me = await fetchOp('whoami', {}, {session: false});
    session.set({me, ended: null});
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      if (token()) {
        storeToken(null);
        session.set({me: null, ended: e.message});
      }
      return false;
    }
    throw e;
  }
}

/** Signs in without a token: works only on a server with auth.enabled false. */
export async function signInWithoutToken(): Promise<Whoami> {
  const me = await fetchOp('whoami', {}, {session: false});
  session.set({me, ended: null});
  return me;
}

export function signOut() {
  storeToken(null);
  session.set({me: null, ended: null});
}

/** The local demo's one-click sign-in, when the server offers it (null otherwise). */
export async function devSignInOptions(): Promise<DevSignIn | null> {
  try {
    return (await request<DevSignIn>('GET', DEV_SIGN_IN, {session: false})).data;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

export async function devSignIn(role: string): Promise<Whoami> {
  const r = await request<DevSignInToken>('POST', DEV_SIGN_IN, {body: {role}, session: false});
  return signIn(r.data.token);
}

/** True when the signed-in role may do action on the resource type. */
export function can(me: Whoami | null, type: string, action: string): boolean {
  const acts = me?.permissions?.[type];
  if (!acts) return false;
  return acts.includes(action) || acts.includes('*');
}

/** True when the role may do anything beyond reading the type. */
export function canChange(me: Whoami | null, type: string): boolean {
  return (me?.permissions?.[type] ?? []).some((a) => a !== 'read');
}
