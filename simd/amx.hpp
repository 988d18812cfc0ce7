// Whether this process may run AMX's bf16 tile instructions (TDPBF16PS: a 16 x 16 fp32 block
// += a 16 x 32 bf16 block times a 32 x 16 one, 16 times the work of one vdpbf16ps).
//
// Three things must hold: the CPU has AMX-TILE and AMX-BF16 (cpuid leaf 7), the OS saves the tile
// state (XCR0 bits 17 and 18), and Linux (5.16 and later) granted this process the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM), which it must ask for once before any thread touches a tile;
// an instruction run without the grant kills the process with SIGILL. The grant is the process's,
// every thread's, and oneDNN asks for it the same way. Linux's rules that come with it: a
// sigaltstack too small for the tiles' signal frame (8 KiB) makes the ask fail (the tiles then
// stay off here), and once granted such a sigaltstack is refused (ENOMEM).
#pragma once

namespace xtgrad {

// True when all three hold; asked once (the first call asks Linux), then the same answer.
bool amx_bf16_permitted();

}  // namespace xtgrad
