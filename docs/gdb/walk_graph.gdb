# docs/debugging.md, "Walk the graph", and gdb test 5 (tests/gdb/run_gdb_test.sh) on
# tests/gdb/gdb_target: the graph-walking commands
# (tools/gdb/xtgrad_commands.py) from the three kinds of frames: user code holding a Tensor,
# the engine about to run a node, and inside an op's backward kernel.
set pagination off
set confirm off
set breakpoint pending on
set print pretty on

# 1. User code, before loss.backward(): no backward runs, so xt-node needs a tensor.
break xtgrad::Tensor::backward
run
# (the library, which carries the printers, is loaded now)
# Abbreviate arrays of more than 64 values, as torch.set_printoptions(threshold=64) (default 1000).
set xtgrad-threshold 64
xt-node
xt-node gdb_target::w_q
xt-node gdb_target::loss
xt-grad
xt-input 0
xt-input 0
xt-input 1
xt-up
xt-up
xt-up

# 2. The engine, about to run the softmax's backward in the first encoder layer's attention.
delete
call xtgrad::debug::break_on_op("SoftmaxBackward")
call xtgrad::debug::break_on_module("encoder.layers.0.enc_self_attn")
break xtgrad::debug::matched_node
continue
xt-node
xt-grad
xt-saved
xt-input 0
xt-grad
xt-input 0
xt-up
xt-up

# 3. Inside the op's backward: the softmax kernel's frame has no node, the engine's state does.
delete
break xtgrad::softmax_backward
continue
xt-node
kill
