#!/usr/bin/env bash
# Screenshots of the installed bundle as a user meets it, under Xvfb: the application launcher
# (rofi's drun mode, which lists the .desktop entries of the user's menu with their icons)
# searching "gpulab", then the window started through the installed menu entry (gio launch).
#
#   packaging/menu_screenshot.sh ARCHIVE OUTDIR
#
# Needs xvfb, rofi, imagemagick (import), xdotool, libglib2.0-bin (gio): apt-get install xvfb rofi xdotool
# imagemagick libglib2.0-bin. Installs into a scratch HOME; nothing of the real user's is touched.
set -euo pipefail
ARCHIVE=$(realpath "${1:?usage: menu_screenshot.sh ARCHIVE OUTDIR}")
OUT=$(mkdir -p "${2:?usage: menu_screenshot.sh ARCHIVE OUTDIR}" && cd "$2" && pwd)
for t in Xvfb rofi import gio; do command -v $t >/dev/null || { echo "needs $t"; exit 1; }; done
W=$(mktemp -d /tmp/gpulab-menu.XXXXXX)
tar -C "$W" -xzf "$ARCHIVE"
NAME=$(basename "$ARCHIVE" .tar.gz)
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_CONFIG_HOME="$W/home/.config"
export XDG_DATA_DIRS="$XDG_DATA_HOME:/usr/local/share:/usr/share"
mkdir -p "$HOME"
"$W/$NAME/install.sh"
DISP=:$((90 + RANDOM % 9))
Xvfb "$DISP" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
XPID=$!
trap 'kill $XPID 2>/dev/null || true' EXIT
export DISPLAY=$DISP
sleep 1
rofi -show drun -show-icons -icon-theme hicolor -filter gpulab -width 60 -lines 6 \
  -theme-str 'window {width: 640px;} element-icon {size: 48px;}' >/dev/null 2>&1 &
RPID=$!
sleep 3
import -window root "$OUT/menu-entry.png"
kill $RPID 2>/dev/null || true
wait $RPID 2>/dev/null || true
# start gpulab the way the menu does: the installed entry's Exec line
T0=$(date +%s.%N)
QT_QPA_PLATFORM=xcb gio launch "$XDG_DATA_HOME/applications/org.gpulab.gpulab.desktop" &
for _ in $(seq 1 120); do
  if xdotool search --onlyvisible --name '^gpulab' >/dev/null 2>&1; then break; fi
  sleep 0.25
done
echo "first window after $(python3 -c "import time; print(f'{time.time() - $T0:.1f}')") s (menu entry -> window mapped)"
sleep 4
import -window root "$OUT/first-window.png"
for p in $(pgrep -f "$XDG_DATA_HOME/gpulab/app/gpulab" || true); do kill "$p" 2>/dev/null || true; done
sleep 1
"$W/$NAME/install.sh" --uninstall >/dev/null
echo "wrote $OUT/menu-entry.png $OUT/first-window.png"
rm -rf "$W"
