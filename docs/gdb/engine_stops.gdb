# docs/debugging.md, "Stop at every node" and "Print a module", and gdb test 6
# (tests/gdb/run_gdb_test.sh) on tests/gdb/gdb_target: at each engine stop the walk starts at the
# stop's node by itself, with the gradient arriving there; a module prints its path and parameters.
set pagination off
set confirm off
set breakpoint pending on
set print pretty on

break xtgrad::debug::before_node
run
set xtgrad-threshold 64
# The loss's node: d loss / d loss, right at the stop.
xt-grad
continue
# The next node: the walk restarted there.
xt-grad
xt-input 0
# The walk went down one node; the next stop restarts it at that stop's node.
continue
xt-grad

# Modules: the path, then every parameter by its dotted name, with its shape.
print *gdb_target::attention
print *gdb_target::model
kill
