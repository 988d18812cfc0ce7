# docs/derivations.md's worked examples in gdb: the gradients arriving at each backward node of
# the two tests in tests/docs/derivations_worked_test.cpp. The doc checker runs this file
# (`gdb -batch -x`); type the same at the (gdb) prompt to follow by hand.
set breakpoint pending on
set confirm off
# LayerNorm: one fused node; grad_out is g, and the node saved the mean and 1/σ per row.
set environment XTGRAD_BREAK_OP=LayerNormBackward
break xtgrad::debug::matched_node
run -tc=derivations*worked*LayerNorm*
print grad_out
xt-node
# Attention: every node of the composition, from out = A v down to S = q kᵀ.
unset environment XTGRAD_BREAK_OP
delete
break xtgrad::debug::before_node
run -tc=derivations*worked*attention*
print grad_out
continue
print grad_out
continue
print grad_out
continue
print grad_out
