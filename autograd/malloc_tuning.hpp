// glibc malloc's settings for the library's allocation pattern, made once when the library loads
// (malloc_tuning.cpp says what each is for and what was measured). Internal.
#pragma once

namespace xtgrad::detail {

// An Error if XTGRAD_MALLOC_NO_FASTBINS holds a value that is neither 1 nor 0: it is read before
// main, where an exception would end the program, so the first tensor made reports it (as the
// block cache's switch is reported at the first large block). Its default then stood.
void check_malloc_tuning();

// Whether the library turned glibc's fastbins off when it loaded (XTGRAD_MALLOC_NO_FASTBINS as the
// environment had it then, or the CPU's default): the process keeps that, whatever the
// environment says later.
bool malloc_fastbins_off();

}  // namespace xtgrad::detail
