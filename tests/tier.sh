# tier.sh — the two tiers of the test suite (tests/run.sh), sourced by the
# end-to-end suites (tests/lib.sh sources it):
#   make check   SC_TIER=check: a sample of each end-to-end suite, for every
#                edit (well under two minutes on two cores);
#   make test    the whole of every suite (SC_TIER unset or anything else).
#   full                 true when the whole suite runs
#   sample WORD...       the words, or under check only those in $SC_SAMPLE
#                        (a recipe of each family: a loop placement with fused
#                        and split backward passes, interleaved, a V)
SC_SAMPLE=${SC_SAMPLE:-"1f1b zb-h1 interleaved zb-v"}
# tests/plan.sh under check: its grid's p:m points (the measured
# case and a small one), at one cap and one cost set.
SC_PLAN_SAMPLE=${SC_PLAN_SAMPLE:-"8:32 4:8"}
full() { [ "${SC_TIER:-test}" != check ]; }
sample() {
  if full; then echo "$*"; return; fi
  for w in "$@"; do
    case " $SC_SAMPLE " in *" $w "*) echo "$w" ;; esac
  done
}
