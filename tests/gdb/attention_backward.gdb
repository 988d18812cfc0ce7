# Run by tests/gdb/run_gdb_test.sh on tests/gdb/gdb_target: stop in the backward of the first
# encoder layer's multi-head attention, at its softmax, and print what the printers show.
set pagination off
set confirm off
set breakpoint pending on
set print pretty on
set environment XTGRAD_BREAK_OP=SoftmaxBackward
set environment XTGRAD_BREAK_MODULE=encoder.layers.0.enc_self_attn
break xtgrad::debug::matched_node
run
info auto-load python-scripts
print node
print grad_out
print gdb_target::w_q
print gdb_target::loss
print *xtgrad::debug::state.node
call xtgrad::debug::print_node(&node)
call xtgrad_print(gdb_target::w_q.impl_._M_ptr)
continue
