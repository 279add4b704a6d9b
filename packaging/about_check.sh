#!/usr/bin/env bash
# The About box of a gpulab executable (the frozen bundle's, in package-check), opened the way a
# user opens it: the window under Xvfb, then Help ▸ About gpulab from the keyboard (Alt+H, A).
# Writes a screenshot of the screen with the box open, and the box's text (`gpulab -v` logs it).
#
#   packaging/about_check.sh GPULAB OUTDIR      -> OUTDIR/about.png, OUTDIR/about.txt
#
# Exits 1 when the window or the box does not appear. Needs Xvfb, xdotool, import (imagemagick).
set -euo pipefail
G=${1:?usage: about_check.sh GPULAB OUTDIR}
OUT=$(mkdir -p "${2:?usage: about_check.sh GPULAB OUTDIR}" && cd "$2" && pwd)
for t in Xvfb xdotool import; do command -v $t >/dev/null || { echo "about_check: needs $t"; exit 1; }; done
DISP=
for n in $(seq 70 89); do [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] || { DISP=:$n; break; }; done
[ -n "$DISP" ] || { echo "about_check: no free X display in :70-:89"; exit 1; }
Xvfb "$DISP" -screen 0 1400x900x24 -nolisten tcp >/dev/null 2>&1 &
XPID=$!
GPID=
cleanup() {
  [ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
  kill "$XPID" 2>/dev/null || true
}
trap cleanup EXIT
export DISPLAY=$DISP
sleep 1
QT_QPA_PLATFORM=xcb "$G" -v > "$OUT/about.log" 2>&1 &
GPID=$!
wid=
for _ in $(seq 1 240); do   # 60 s
  wid=$(xdotool search --onlyvisible --name '^gpulab' 2>/dev/null | head -n1 || true)
  [ -n "$wid" ] && break
  kill -0 "$GPID" 2>/dev/null || { cat "$OUT/about.log"; echo "about_check: gpulab exited before its window"; exit 1; }
  sleep 0.25
done
[ -n "$wid" ] || { cat "$OUT/about.log"; echo "about_check: no gpulab window after 60 s"; exit 1; }
sleep 2
about=
for _ in 1 2 3; do   # the menu bar takes the keys once the window has the focus
  xdotool windowfocus --sync "$wid" 2>/dev/null || true
  xdotool key --clearmodifiers alt+h
  sleep 0.7
  xdotool key a
  for _ in $(seq 1 20); do
    about=$(xdotool search --onlyvisible --name '^About gpulab' 2>/dev/null | head -n1 || true)
    [ -n "$about" ] && break 2
    sleep 0.25
  done
  xdotool key Escape Escape
done
[ -n "$about" ] || { import -window root "$OUT/about.png"; cat "$OUT/about.log"; echo "about_check: Help ▸ About did not open"; exit 1; }
sleep 1
import -window root "$OUT/about.png"
xdotool windowfocus --sync "$about" 2>/dev/null || true
xdotool key Escape
sleep 0.5
kill "$GPID" 2>/dev/null || true
wait "$GPID" 2>/dev/null || true
GPID=
# the box's text, as `gpulab -v` logged it (app/gui/about.py)
awk '/: About gpulab:$/{on=1; next} on && /^gpulab: [A-Z]+: /{exit} on{print}' "$OUT/about.log" > "$OUT/about.txt"
[ -s "$OUT/about.txt" ] || { cat "$OUT/about.log"; echo "about_check: the About box's text is not in the log"; exit 1; }
echo "about_check: About box open (screenshot $OUT/about.png); it says:"
sed 's/^/   | /' "$OUT/about.txt"
