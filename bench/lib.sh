# bench/lib.sh: what the benchmark scripts share; sourced, with $out set
# to the script's output directory.

# elapsed command...: runs the command, its output discarded and its
# errors added to $out/stderr.txt, and prints the seconds it took.
elapsed() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>>"$out/stderr.txt"
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}

# median value...: the median of the values.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
