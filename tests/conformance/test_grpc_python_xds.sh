#!/usr/bin/env bash
# test_grpc_python_xds.sh — gRPC C core (1.51, through Debian's python3-grpcio under
# /usr/bin/python3) dials xds:///echo.test through Sextant: it reaches the backend
# the published snapshot names, follows `sextant publish` to a second backend, fails
# as the client reports when the listener and route are removed, and recovers when
# they come back. The scenario is lib/client_flow.sh; the client is lib/xds_client.py.
source "${SEXTANT_SOURCE_DIR:?SEXTANT_SOURCE_DIR must name the source tree}/tests/conformance/lib/harness.sh"
source "$CONF/lib/client_flow.sh"

conf_init grpc-python
conf_need_python_grpc || exit 1
conf_client_flow py conf-py
finish
