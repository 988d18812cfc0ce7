# docs/debugging.md, "Follow a gradient in gdb": from the loss of tutorial C's Winter Games
# Transformer to encoder.layers.0.enc_self_attn.W_Q.weight. Run by tests/gdb/run_gdb_test.sh:
#   gdb -q -batch -x docs/gdb/follow_gradient.gdb build/tests/gdb_target
set pagination off
set confirm off
set breakpoint pending on
set print pretty on

# 1. The first backward node: the loss, seeded with 1.
break xtgrad::debug::before_node
run
# (the library, which carries the printers, is loaded now)
# Abbreviate arrays of more than 64 values, as torch.set_printoptions(threshold=64) (default 1000).
set xtgrad-threshold 64
print node
print grad_out
call xtgrad::debug::print_graph(&node, 3)

# 2. Stop only in the first encoder layer's W_Q, before and after its node runs.
delete
call xtgrad::debug::break_on_module("encoder.layers.0.enc_self_attn.W_Q")
break xtgrad::debug::matched_node
break xtgrad::debug::matched_node_done
continue
bt 4
print node
print grad_out

# 3. The node has run: W_Q.weight holds its gradient.
continue
print node
print gdb_target::w_q
call xtgrad::debug::print_grad(gdb_target::w_q)
continue
