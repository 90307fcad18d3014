# Service "python": Debian's python3-grpcio and python3-protobuf, on which
# the Python example plugin (examples/plugin-python) runs; the tests in
# cmd/gpuaccept (TestPythonPlugin*) run it through gpuaccept with
# /usr/bin/python3. No daemon. Sourced by scripts/testenv.sh.
up_python() {
	need_apt python3-grpcio python3-protobuf
}
