# Lesson 2 in gdb (docs/learn/02_softmax.md): softmax_backward's arguments and what it returns.
set breakpoint pending on
set confirm off
break ex02::softmax_backward
run -ts=02_softmax_backward -tc=*upstream*
print y
print g
finish
