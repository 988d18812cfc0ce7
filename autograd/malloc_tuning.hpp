// glibc malloc's settings for the library's allocation pattern, made once when the library loads
// (malloc_tuning.cpp says what each is for and what was measured). Internal.
#pragma once

namespace xtgrad::detail {

// An Error if XTGRAD_MALLOC_NO_FASTBINS held a value that is neither 1 nor 0 when the library
// loaded, quoting that value: it is read before main, where an exception would end the program,
// so check_environment and the first tensor made report it (as the block cache's switch is
// reported at the first large block). The CPU's default then stood. A value set or changed
// after load changes nothing, and is not read.
void check_malloc_tuning();

// Whether the library turned glibc's fastbins off when it loaded (XTGRAD_MALLOC_NO_FASTBINS as the
// environment had it then, or the CPU's default): the process keeps that, whatever the
// environment says later.
bool malloc_fastbins_off();

}  // namespace xtgrad::detail
