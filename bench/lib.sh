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

# measure NAME CMD...: runs CMD $rounds times (GNU time's -f) in the
# current directory, its output discarded and its errors added to
# $out/stderr.txt, and prints "NAME wall-s cpu-s rss-MB", medians.
measure() {
  local name=$1 w=() c=() r=() line wall user sys rss
  shift
  for _ in $(seq "$rounds"); do
    line=$(/usr/bin/time -f '%e %U %S %M' -o "$out/time.txt" "$@" >/dev/null 2>>"$out/stderr.txt" && cat "$out/time.txt") ||
      { echo "$(basename "$0"): $name failed: see $out/stderr.txt" >&2; exit 1; }
    read -r wall user sys rss <<<"$line"
    w+=("$wall") c+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')") r+=("$rss")
  done
  printf '%s %s %s %s\n' "$name" "$(median "${w[@]}")" "$(median "${c[@]}")" "$(median "${r[@]}" | awk '{ printf "%.0f", $1 / 1024 }')"
}
