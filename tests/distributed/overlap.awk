# The overlap of one step's bucket allreduces with backward, from zero_run --timeline's lines
# (tests/distributed/run_zero_test.sh and run_netns_test.sh):
#   bucket K bytes B launch L finish F wait W     (seconds since the step's first gradient hook)
#   backward_end E hidden H
#   blocking_allreduce bytes B seconds T
# Prints one line: buckets, hidden share, exposed wait, and the cost model's exposed time with
# the link's time taken from the blocking allreduce: max(0, T - (E - first launch)), i.e. the
# allreduce overlaps backward from its first launch on. Exit 1 if the timeline is inconsistent
# (no bucket, launches out of order, a finish before its launch, a share outside [0, 1]).
/^bucket / {
  n++; launch[n] = $6; finish[n] = $8; wait += $10
  if ($8 < $6 || (n > 1 && $6 < launch[n - 1])) bad = 1
}
/^backward_end / { end = $2; hidden = $4 }
/^blocking_allreduce / { T = $5 }
END {
  if (n < 2 || hidden < 0 || hidden > 1 || T <= 0) bad = 1
  window = end - launch[1]; predicted = T - window; if (predicted < 0) predicted = 0
  printf "%d buckets, %.0f %% of the allreduce time hidden behind backward, wait %.1f ms after it; " \
         "blocking allreduce %.1f ms, backward window %.1f ms: cost model's exposed time %.1f ms", \
         n, 100 * hidden, 1e3 * wait, 1e3 * T, 1e3 * window, 1e3 * predicted
  exit bad
}
