# Sourced by the MPI test scripts (run_mpi_test.sh, run_zero_test.sh, run_netns_test.sh) after they
# set `build`: skips (exit 0) when the build has no MPI or mpirun is missing; otherwise sets
# OpenMPI's environment for CI (root, containers), a scratch folder $out (removed on exit unless
# the script sets its own trap) and the ok / bad reporters, which record a failure in $fail.
if ! command -v mpirun >/dev/null || ! grep -q XTGRAD_WITH_MPI "$build/compile_commands.json"; then
  echo "  skip: built without MPI or no mpirun (meson -Dmpi=enabled, libopenmpi-dev openmpi-bin)"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }
# CI runs as root; more processes than cores need mpirun's --oversubscribe (the scripts pass it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers often forbid the CMA copy
