// http3_udp_check.js — what a proxy receives for an HTTP/3 and a UDP listener, decoded
// with Envoy's upstream protos from an ads_fetch.js document (first argument): a QUIC
// listener named NAME on UDP port PORT (udp_listener_config.quic_options), the QUIC
// transport socket with a DownstreamTlsContext (SDS secret SECRET, ALPN h3), an HTTP
// connection manager with codec HTTP3 taking its routes over ADS (RDS), as any socket
// listener does; and a listener UDP_NAME on UDP port UDP_PORT whose udp_proxy listener
// filter forwards to cluster CLUSTER, which CDS serves.
//
//   node http3_udp_check.js FETCH.json NAME PORT SECRET UDP_NAME UDP_PORT CLUSTER
'use strict';

const fs = require('fs');
const x = require('./xds');
const {check} = x;

const [file, name, port, secret, udpName, udpPort, cluster] = process.argv.slice(2);

x.main(async () => {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const b64 = doc.LDS.resources[name];
  if (!check(`LDS holds the HTTP/3 listener ${name}`, b64, Object.keys(doc.LDS.resources))) return;
  const l = x.decodeAny({type_url: 'type.googleapis.com/envoy.config.listener.v3.Listener', value: Buffer.from(b64, 'base64')});
  const sa = l.address.socket_address;
  check(`it binds UDP port ${port}`, sa.protocol === 'UDP' && String(sa.port_value) === String(port), sa);
  check('it takes QUIC (udp_listener_config.quic_options)', l.udp_listener_config && l.udp_listener_config.quic_options, l.udp_listener_config);
  const fc = (l.filter_chains || [])[0] || {};
  const ts = fc.transport_socket || {};
  check('its transport socket is QUIC', ts.name === 'envoy.transport_sockets.quic' && /QuicDownstreamTransport$/.test(ts.typed_config.type_url), ts.name);
  const q = x.decodeAny(ts.typed_config);
  const ctx = (q.downstream_tls_context || {}).common_tls_context || {};
  check(`with TLS from SDS secret ${secret} and ALPN h3`,
    (ctx.tls_certificate_sds_secret_configs || []).some((s) => s.name === secret) && JSON.stringify(ctx.alpn_protocols) === '["h3"]', ctx);
  const hcm = x.decodeAny(fc.filters[0].typed_config);
  check('its connection manager speaks HTTP/3', hcm.codec_type === 'HTTP3' && hcm.http3_protocol_options, {codec: hcm.codec_type});
  check(`and takes its routes over ADS from route configuration ${name}`, hcm.rds && hcm.rds.route_config_name === name &&
    hcm.rds.config_source && hcm.rds.config_source.ads, hcm.rds);

  const ub = doc.LDS.resources[udpName];
  if (!check(`LDS holds the UDP listener ${udpName}`, ub, Object.keys(doc.LDS.resources))) return;
  const u = x.decodeAny({type_url: 'type.googleapis.com/envoy.config.listener.v3.Listener', value: Buffer.from(ub, 'base64')});
  const usa = u.address.socket_address;
  check(`it binds UDP port ${udpPort}`, usa.protocol === 'UDP' && String(usa.port_value) === String(udpPort), usa);
  check('it has no filter chain (datagrams go to the listener filter)', !(u.filter_chains || []).length, u.filter_chains);
  const lf = (u.listener_filters || [])[0] || {};
  check('its listener filter is the udp proxy', lf.name === 'envoy.filters.udp_listener.udp_proxy' &&
    /UdpProxyConfig$/.test((lf.typed_config || {}).type_url || ''), lf.name);
  const proxy = lf.typed_config ? x.decodeAny(lf.typed_config) : {};
  check(`which forwards to cluster ${cluster}`, proxy.cluster === cluster && proxy.stat_prefix === udpName, proxy);
  check(`and CDS serves cluster ${cluster}`, doc.CDS.resources[cluster], Object.keys(doc.CDS.resources));
});
