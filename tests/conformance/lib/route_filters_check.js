// route_filters_check.js — what a proxy receives for a route rule with session
// persistence whose backend has a token policy, decoded with Envoy's upstream protos
// from an ads_fetch.js document (file given as the first argument): every listener of
// the group has the local rate limit and the stateful session filters, both optional
// and without configuration of their own, before the router; every Route of the rule
// carries, each in an optional FilterConfig, a StatefulSessionPerRoute whose session
// state is a cookie named as the rule says (the permanent cookie's TTL, path /), and a
// LocalRateLimit whose bucket refills RPM requests a minute and holds RPM × burst.
//
//   node route_filters_check.js FETCH.json COOKIE TTL_SECONDS RPM MAX_TOKENS
'use strict';

const fs = require('fs');
const x = require('./xds');
const {check} = x;

const SESSION = 'envoy.filters.http.stateful_session';
const RATELIMIT = 'envoy.filters.http.local_ratelimit';
const [file, cookieName, ttl, rpm, maxTokens] = process.argv.slice(2);

function decode(type, b64) {
  return x.decodeAny({type_url: `type.googleapis.com/${type}`, value: Buffer.from(b64, 'base64')});
}

x.main(async () => {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const listeners = Object.values(doc.LDS.resources).map((b) => decode('envoy.config.listener.v3.Listener', b));
  check('the group has a listener', listeners.length > 0, Object.keys(doc.LDS.resources));
  for (const l of listeners) {
    const hcm = x.decodeAny(l.api_listener.api_listener);
    const names = (hcm.http_filters || []).map((f) => f.name);
    check(`listener ${l.name}: the local rate limit and stateful session filters come before the router`,
      JSON.stringify(names) === JSON.stringify([RATELIMIT, SESSION, 'envoy.filters.http.router']), names);
    const rl = (hcm.http_filters || [])[0] || {};
    const rlc = rl.typed_config ? x.decodeAny(rl.typed_config) : {};
    check(`listener ${l.name}: the rate limit filter is optional, with no bucket of its own`,
      rl.is_optional === true && /LocalRateLimit$/.test(rl.typed_config.type_url) && !rlc.token_bucket && rlc.stat_prefix, {rl, rlc});
    const f = (hcm.http_filters || [])[1] || {};
    check(`listener ${l.name}: it is optional (clients without it ignore it)`, f.is_optional === true, f);
    let top = null;
    try {
      top = x.decodeAny(f.typed_config);
    } catch (e) {
      top = {error: e.message};
    }
    check(`listener ${l.name}: its StatefulSession is empty (the routes decide)`,
      f.typed_config && /StatefulSession$/.test(f.typed_config.type_url) && top && !top.error && !top.session_state, {f, top});
  }
  const routes = [];
  for (const b of Object.values(doc.RDS.resources)) {
    const rc = decode('envoy.config.route.v3.RouteConfiguration', b);
    for (const vh of rc.virtual_hosts || []) routes.push(...(vh.routes || []));
  }
  check('the route configuration has routes', routes.length > 0);
  for (const r of routes) {
    const any = (r.typed_per_filter_config || {})[SESSION];
    if (!check(`route ${r.name}: carries a per-route config of the stateful session filter`, any, r)) continue;
    const fc = x.decodeAny(any);
    check(`route ${r.name}: wrapped in an optional FilterConfig`, /route\.v3\.FilterConfig$/.test(any.type_url) && fc.is_optional === true, fc);
    const per = x.decodeAny(fc.config);
    const state = per.stateful_session && per.stateful_session.session_state;
    check(`route ${r.name}: StatefulSessionPerRoute sets a session state`, per.override === 'stateful_session' && state, per);
    if (!state) continue;
    const cookie = x.decodeAny(state.typed_config).cookie || {};
    check(`route ${r.name}: the session lives in cookie ${cookieName}, path /, TTL ${ttl}s`,
      /CookieBasedSessionState$/.test(state.typed_config.type_url) && cookie.name === cookieName && cookie.path === '/' &&
      String((cookie.ttl || {}).seconds) === String(ttl), {type: state.typed_config.type_url, cookie});
    const rany = (r.typed_per_filter_config || {})[RATELIMIT];
    if (!check(`route ${r.name}: carries its backend's rate limit`, rany, Object.keys(r.typed_per_filter_config || {}))) continue;
    const rfc = x.decodeAny(rany);
    check(`route ${r.name}: wrapped in an optional FilterConfig`, rfc.is_optional === true, rfc);
    const lim = x.decodeAny(rfc.config);
    const b = lim.token_bucket || {};
    // HUNDRED is the denominator's default: a decoder without defaults leaves it out.
    const pct = (p) => p && p.default_value && p.default_value.numerator === 100 && (p.default_value.denominator || 'HUNDRED') === 'HUNDRED';
    check(`route ${r.name}: ${rpm} requests a minute, ${maxTokens} at once, enabled and enforced for every request`,
      String((b.tokens_per_fill || {}).value) === String(rpm) && String(b.max_tokens) === String(maxTokens) &&
      String((b.fill_interval || {}).seconds) === '60' && pct(lim.filter_enabled) && pct(lim.filter_enforced), lim);
  }
});
