// envoy_checks.js — what a proxy relies on in each Envoy resource Sextant sends,
// decoded with Envoy's upstream protos. Each function returns the list of problems
// found (empty when the resource is usable), so a test can report all of them.
'use strict';

const x = require('./xds');

// Resource name of a decoded message of the given type.
function resourceName(type, msg) {
  return type === x.TYPE.EDS ? msg.cluster_name : msg.name;
}

function isIp(s) {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s || '') || /^[0-9a-fA-F:]+$/.test(s || '');
}

function durationMs(d) {
  if (!d) return null;
  return Number(d.seconds || 0) * 1000 + Math.round(Number(d.nanos || 0) / 1e6);
}

// cluster(c, want): want = {connectTimeoutMs}
function cluster(c, want = {}) {
  const p = [];
  if (!c.name) p.push('cluster has no name');
  if (c.type !== 'EDS') p.push(`cluster ${c.name}: type is ${c.type}, not EDS`);
  const eds = c.eds_cluster_config && c.eds_cluster_config.eds_config;
  if (!eds) p.push(`cluster ${c.name}: no eds_cluster_config.eds_config`);
  else if (eds.config_source_specifier !== 'ads' || !eds.ads)
    p.push(`cluster ${c.name}: eds_config is not ads {} (${eds.config_source_specifier})`);
  if (c.lb_policy !== undefined && c.lb_policy !== 'ROUND_ROBIN' && c.lb_policy !== 'RING_HASH')
    p.push(`cluster ${c.name}: lb_policy ${c.lb_policy} (gRPC clients take ROUND_ROBIN or RING_HASH)`);
  if (want.connectTimeoutMs !== undefined && durationMs(c.connect_timeout) !== want.connectTimeoutMs)
    p.push(`cluster ${c.name}: connect_timeout ${JSON.stringify(c.connect_timeout)}, want ${want.connectTimeoutMs} ms`);
  return p;
}

// The EDS name a cluster's endpoints are served under.
function edsName(c) {
  return (c.eds_cluster_config && c.eds_cluster_config.service_name) || c.name;
}

// cla(a, want): want = {ports: [..]} the endpoint ports expected (any order)
function cla(a, want = {}) {
  const p = [];
  if (!a.cluster_name) p.push('ClusterLoadAssignment has no cluster_name');
  const ports = [];
  const seen = new Set();
  for (const [i, e] of (a.endpoints || []).entries()) {
    if (!e.locality) p.push(`${a.cluster_name}: endpoints[${i}] has no locality`);
    const w = e.load_balancing_weight && e.load_balancing_weight.value;
    if (!(w > 0)) p.push(`${a.cluster_name}: endpoints[${i}] load_balancing_weight ${JSON.stringify(e.load_balancing_weight)} (must be > 0)`);
    for (const [j, le] of (e.lb_endpoints || []).entries()) {
      const sa = le.endpoint && le.endpoint.address && le.endpoint.address.socket_address;
      if (!sa) {
        p.push(`${a.cluster_name}: endpoints[${i}].lb_endpoints[${j}] has no socket_address`);
        continue;
      }
      if (!isIp(sa.address)) p.push(`${a.cluster_name}: endpoint address ${sa.address} is not an IP literal`);
      if (!(sa.port_value > 0)) p.push(`${a.cluster_name}: endpoint ${sa.address} has no port_value`);
      const key = `${sa.address}:${sa.port_value}`;
      if (seen.has(key)) p.push(`${a.cluster_name}: duplicate endpoint ${key}`);
      seen.add(key);
      ports.push(sa.port_value);
      if (le.health_status !== undefined && le.health_status !== 'UNKNOWN' && le.health_status !== 'HEALTHY')
        p.push(`${a.cluster_name}: endpoint ${key} health_status ${le.health_status}`);
    }
  }
  if (!ports.length) p.push(`${a.cluster_name}: no endpoints`);
  if (want.ports) {
    const got = [...ports].sort((m, n) => m - n).join(',');
    const exp = [...want.ports].sort((m, n) => m - n).join(',');
    if (got !== exp) p.push(`${a.cluster_name}: endpoint ports ${got}, want ${exp}`);
  }
  return p;
}

// listener(l, host): the proxyless listener for xds:///host. Returns {problems, rdsName}.
function listener(l, host) {
  const p = [];
  let rdsName = null;
  if (host !== undefined && l.name !== host) p.push(`listener name ${l.name}, want ${host}`);
  const any = l.api_listener && l.api_listener.api_listener;
  if (!any) return {problems: [...p, `listener ${l.name}: no api_listener`], rdsName};
  if (any.type_url !== x.HCM_TYPE) return {problems: [...p, `listener ${l.name}: api_listener is ${any.type_url}`], rdsName};
  let hcm;
  try {
    hcm = x.decodeAny(any);
  } catch (e) {
    return {problems: [...p, `listener ${l.name}: HttpConnectionManager does not decode: ${e.message}`], rdsName};
  }
  if (hcm.route_specifier !== 'rds' || !hcm.rds) p.push(`listener ${l.name}: HCM route_specifier ${hcm.route_specifier}, want rds`);
  else {
    const cs = hcm.rds.config_source;
    if (!cs || cs.config_source_specifier !== 'ads' || !cs.ads) p.push(`listener ${l.name}: rds.config_source is not ads {}`);
    if (!hcm.rds.route_config_name) p.push(`listener ${l.name}: rds.route_config_name is empty`);
    rdsName = hcm.rds.route_config_name;
  }
  const filters = hcm.http_filters || [];
  const last = filters[filters.length - 1];
  if (!last) p.push(`listener ${l.name}: no http_filters (C core NACKs that)`);
  else {
    if (last.name !== 'envoy.filters.http.router') p.push(`listener ${l.name}: last http filter is ${last.name}, not the router`);
    if (!last.typed_config || last.typed_config.type_url !== x.ROUTER_TYPE)
      p.push(`listener ${l.name}: router typed_config is ${last.typed_config && last.typed_config.type_url}`);
    else {
      try {
        x.decodeAny(last.typed_config);
      } catch (e) {
        p.push(`listener ${l.name}: Router does not decode: ${e.message}`);
      }
    }
  }
  return {problems: p, rdsName};
}

function domainMatches(domain, host) {
  if (domain === '*' || domain === host) return true;
  if (domain.startsWith('*')) return host.endsWith(domain.slice(1));
  if (domain.endsWith('*')) return host.startsWith(domain.slice(0, -1));
  return false;
}

// route(rc, host, want): want = {timeoutMs}. Returns {problems, clusters}.
function route(rc, host, want = {}) {
  const p = [];
  const clusters = [];
  const vh = (rc.virtual_hosts || []).find((v) => (v.domains || []).some((d) => domainMatches(d, host)));
  if (!vh) return {problems: [`route ${rc.name}: no virtual host matches ${host}`], clusters};
  const routes = vh.routes || [];
  if (!routes.length) p.push(`route ${rc.name}: virtual host ${vh.name} has no routes`);
  for (const [i, r] of routes.entries()) {
    if (!r.match || !r.match.path_specifier) p.push(`route ${rc.name}: routes[${i}].match has no path specifier`);
    if (r.action !== 'route' || !r.route) {
      p.push(`route ${rc.name}: routes[${i}] action ${r.action}, want route`);
      continue;
    }
    if (r.route.cluster_specifier === 'cluster') clusters.push(r.route.cluster);
    else if (r.route.cluster_specifier === 'weighted_clusters')
      for (const wc of r.route.weighted_clusters.clusters || []) clusters.push(wc.name);
    else p.push(`route ${rc.name}: routes[${i}] has no cluster (${r.route.cluster_specifier})`);
    if (want.timeoutMs !== undefined && durationMs(r.route.timeout) !== want.timeoutMs)
      p.push(`route ${rc.name}: routes[${i}] timeout ${JSON.stringify(r.route.timeout)}, want ${want.timeoutMs} ms`);
  }
  return {problems: p, clusters};
}

module.exports = {resourceName, cluster, edsName, cla, listener, route, durationMs};
