# Shared by the tests of mkc serve and of constrained answers (test_serve.sh,
# test_format.sh, test_grammar.sh): sourced after lib.sh, they talk to the
# server lib.sh's start left on $port.
client=tests/serve_client.py

# call METHOD PATH [BODY]: the answer in $tmp/ans (status on its first line), the body in $tmp/body.
call() {
  python3 "$client" "$port" "$@" >"$tmp/ans" 2>&1
  tail -n +2 "$tmp/ans" >"$tmp/body"
  status=$(head -n 1 "$tmp/ans")
}
get() { python3 "$client" get "$tmp/body" "$@" 2>/dev/null; }
# content KEY...: the answer's value at the keys (and list indexes), as a JSON string.
content() {
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v = v[int(k) if k.isdigit() else k]
print(json.dumps(v))' "$tmp/body" "$@" 2>/dev/null
}
# quoted FILE: FILE's text (less run's closing newline) as a JSON string.
quoted() { python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()[:-1]))' "$1"; }
# is_object FILE: the file (less run's closing newline) is one JSON object for Python.
is_object() {
  python3 -c 'import json, sys; t = open(sys.argv[1]).read(); t = t[:-1] if t.endswith("\n") else t
sys.exit(0 if isinstance(json.loads(t), dict) else 1)' "$1" 2>/dev/null
}
metric() { sed -n "s/^mkc_$1 //p" "$tmp/body"; } # a value of GET /metrics's answer

# refused NAME STATUS PHRASE METHOD PATH [BODY]: that status, an error message holding PHRASE.
refused() {
  local name=$1 want=$2 phrase=$3
  shift 3
  call "$@"
  local msg
  msg=$(get error message)
  if [ "$status" = "$want" ] && [[ $msg == *"$phrase"* ]]; then
    ok "$name: $want ($msg)"
  else
    fail "$name: $want with \"$phrase\"" "got: $(head -c 300 "$tmp/ans")"
  fi
}

# raw NAME STATUS BYTES: BYTES (printf's format) sent as they are; that status.
raw() {
  printf "$3" >"$tmp/raw"
  python3 "$client" "$port" raw "$tmp/raw" >"$tmp/ans" 2>&1
  [ "$(head -n 1 "$tmp/ans")" = "$2" ] && ok "$1: $2" || fail "$1: $2" "$(head -c 300 "$tmp/ans")"
}

# stop NAME [SIGNAL]: Ctrl-C (or SIGNAL); the server exits 0 and says how many requests it served.
stop() {
  kill "-${2:-INT}" "$pid"
  wait "$pid"
  local rc=$?
  if [ "$rc" -eq 0 ] && grep -q "stopped serving after" "$tmp/$1.err"; then
    ok "$1: SIG${2:-INT} stops the server (exit 0, $(grep -o 'after [0-9]* requests' "$tmp/$1.err"))"
  else
    fail "$1: SIG${2:-INT} stops the server" "exit $rc" "$(tail -n 3 "$tmp/$1.err")"
  fi
}
