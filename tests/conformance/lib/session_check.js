// session_check.js — what a proxy receives for a route rule with session persistence,
// decoded with Envoy's upstream protos from an ads_fetch.js document (file given as the
// first argument): every listener of the group has the stateful session filter, marked
// optional, before the router, with an empty StatefulSession; every Route of the rule
// carries a FilterConfig (optional) holding a StatefulSessionPerRoute whose session
// state is a cookie named as the rule says, with the permanent cookie's TTL and path /.
//
//   node session_check.js FETCH.json COOKIE TTL_SECONDS
'use strict';

const fs = require('fs');
const x = require('./xds');
const {check} = x;

const SESSION = 'envoy.filters.http.stateful_session';
const [file, cookieName, ttl] = process.argv.slice(2);

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
    check(`listener ${l.name}: the stateful session filter comes before the router`,
      JSON.stringify(names) === JSON.stringify([SESSION, 'envoy.filters.http.router']), names);
    const f = (hcm.http_filters || [])[0] || {};
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
  }
});
