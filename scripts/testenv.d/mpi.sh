# Service "mpi": Open MPI's mpirun from Debian, for the local launcher's
# two-rank test. Sourced by scripts/testenv.sh.
up_mpi() {
	need_apt openmpi-bin
	setenv GPUACCEPT_MPIRUN "$(command -v mpirun)"
}
