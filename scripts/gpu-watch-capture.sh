#!/usr/bin/env bash
# On a GPU machine: run `kwb watch` on the elementwise-add ladder in tmux and capture the screen
# once every version is checked and benchmarked, at the first size and at 256Mi.
set -uo pipefail
kwb=${KWB:-kwb}
out=${OUT:-.}
ws=${1:-workspaces/elementwise-add.yaml}
tmux kill-session -t kwbwatch 2>/dev/null
tmux new-session -d -s kwbwatch -x 200 -y 50 "$kwb watch $ws" \; set-option remain-on-exit on
settled() { # every version listed as done, for 3 captures in a row
  local n=0
  for _ in $(seq 1 600); do
    s=$(tmux capture-pane -p -t kwbwatch)
    if [ "$(grep -c ' done' <<<"$s")" -ge 7 ] && ! grep -qE 'checking|benchmarking|compiling|Looking for a GPU' <<<"$s"; then
      n=$((n + 1)); [ $n -ge 3 ] && return 0
    else n=0; fi
    sleep 0.2
  done
  return 1
}
SECONDS=0
settled || echo "did not settle in 120 s"
echo "settled after ${SECONDS} s"
tmux capture-pane -p -t kwbwatch > "$out/watch-1mi.txt"
tmux send-keys -t kwbwatch s s; sleep 1

tmux capture-pane -p -t kwbwatch > "$out/watch-256mi.txt"
tmux send-keys -t kwbwatch g m j m; sleep 1
tmux capture-pane -p -t kwbwatch > "$out/watch-compare.txt"
tmux send-keys -t kwbwatch q; sleep 1
tmux kill-session -t kwbwatch 2>/dev/null
cat "$out/watch-256mi.txt"
