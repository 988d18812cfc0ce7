# The gdb test's test 7 (tests/gdb/run_gdb_test.sh): a product that saved layer norm's output
# (encoder.layers.1's W_Q reads encoder.layers.0's last norm) keeps its recipe, not its values
# (autograd/recompute.hpp): before its node runs the printer says so; after, it shows the values
# made again, and the input they belong to has values again.
set pagination off
set confirm off
set breakpoint pending on
set print pretty on
break xtgrad::debug::before_node
run
set xtgrad-threshold 8
delete
call xtgrad::debug::break_on_module("encoder.layers.1.enc_self_attn.W_Q")
break xtgrad::debug::matched_node
break xtgrad::debug::matched_node_done
continue
print node
continue
print node
continue
