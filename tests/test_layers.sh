#!/usr/bin/env bash
# The layer rules of runtime/README.md: a file under runtime/ includes headers
# of its own folder, of a lower layer, or of templates/, never of a higher
# layer or of another folder of its own layer. The layers are read from the
# README's table, so the rules and this check cannot drift apart. The checker
# is first run on a planted tree that breaks each rule, so it is shown to fail.
source "$(dirname "$0")/lib.sh"

# layers README: "FOLDER RANK" lines from the table between the markers.
layers() {
  sed -n '/<!-- layers -->/,/<!-- \/layers -->/p' "$1" |
    awk -F'|' 'NF >= 4 && $2 ~ /[0-9]/ { gsub(/[ `]/, "", $2); n = split($3, f, ","); for (i = 1; i <= n; i++) { gsub(/[ `]/, "", f[i]); sub(/\/$/, "", f[i]); if (f[i] != "") print f[i], $2 } }'
}

# check ROOT README: prints one line per violation in ROOT (a runtime/ tree).
check() {
  local root=$1 readme=$2
  declare -A rank=()
  local folder r
  while read -r folder r; do rank[$folder]=$r; done < <(layers "$readme")
  [ ${#rank[@]} -gt 0 ] || { echo "$readme: no layer table"; return; }
  local f dir inc target
  while IFS= read -r f; do
    dir=$(dirname "${f#"$root"/}")
    [ "$dir" = . ] && { echo "${f#"$root"/}: a source file outside the layer folders"; continue; }
    [ -n "${rank[$dir]:-}" ] || { echo "$dir: a folder the README's layer table does not place"; continue; }
    while IFS= read -r inc; do
      if [ -e "$(dirname "$f")/$inc" ]; then
        target=$dir # same folder
      elif [ -e "$root/$inc" ]; then
        target=$(dirname "$inc")
      elif [ -e templates/"$inc" ]; then
        continue
      else
        echo "${f#"$root"/}: #include \"$inc\" is not in its folder, runtime/ or templates/"
        continue
      fi
      [ "$target" = "$dir" ] && continue
      if [ -z "${rank[$target]:-}" ]; then
        echo "${f#"$root"/}: #include \"$inc\": folder $target has no layer"
      elif [ "${rank[$target]}" -ge "${rank[$dir]}" ]; then
        echo "${f#"$root"/}: #include \"$inc\": $dir (layer ${rank[$dir]}) may not include $target (layer ${rank[$target]})"
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done < <(find "$root" -name '*.[ch]' | LC_ALL=C sort)
}

# The planted tree: one file per rule broken, and one that keeps them.
plant=$tmp/plant
mkdir -p "$plant/util" "$plant/formats" "$plant/exec" "$plant/backend/cpu" "$plant/backend/cuda" "$plant/stray"
cp runtime/README.md "$tmp/README.md"
echo '#include "exec/session.h"' >"$plant/formats/up.c"                # formats -> exec: upward
echo '#include "backend/cuda/k.h"' >"$plant/backend/cpu/side.c"       # sibling of the same layer
echo '#include "util/u.h"' >"$plant/formats/down.c"                   # fine: downward
echo '#include "nowhere.h"' >"$plant/util/lost.c"                     # unresolved
echo '' >"$plant/stray/s.c"                                           # a folder with no layer
touch "$plant/exec/session.h" "$plant/backend/cuda/k.h" "$plant/util/u.h"
out=$(check "$plant" "$tmp/README.md")
for want in "formats/up.c: #include \"exec/session.h\": formats (layer" \
  "backend/cpu/side.c: #include \"backend/cuda/k.h\": backend/cpu (layer" \
  "util/lost.c: #include \"nowhere.h\" is not in" \
  "stray: a folder the README's layer table does not place"; do
  if grep -qF "$want" <<<"$out"; then ok "planted: $want"; else fail "planted: $want" "$out"; fi
done
if grep -q 'down.c' <<<"$out"; then fail "planted: a downward include is allowed" "$out"; else ok "planted: a downward include is allowed"; fi

n=$(layers runtime/README.md | wc -l)
if [ "$n" -ge 9 ]; then ok "runtime/README.md places $n folders in layers"; else fail "runtime/README.md: $n folders in its layer table" "$(layers runtime/README.md)"; fi
out=$(check runtime runtime/README.md)
if [ -z "$out" ]; then ok "runtime/: every include keeps the layer rules"; else fail "runtime/: layer rules broken" "$out"; fi
finish
