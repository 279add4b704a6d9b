#!/bin/sh
# Install the gpulab bundle for this user (no root needed), or remove it again.
#
#   ./install.sh                 copy gpulab into ~/.local/share/gpulab, put `gpulab` on ~/.local/bin,
#                                and add the menu entry, icons, file types and AppStream metadata
#   ./install.sh --prefix DIR    the same under DIR (DIR/share, DIR/bin) instead of ~/.local
#   ./install.sh --uninstall     remove everything a previous install wrote (same --prefix)
#
# Run it from the unpacked archive (gpulab-VERSION-linux-x86_64*/install.sh).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX="$HOME/.local"
ACTION=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=${2:?--prefix needs a folder}; shift 2;;
    --prefix=*) PREFIX=${1#--prefix=}; shift;;
    --uninstall) ACTION=uninstall; shift;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0;;
    *) echo "install.sh: unknown option $1 (try --help)" >&2; exit 2;;
  esac
done
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
SHARE="$PREFIX/share"
BIN="$PREFIX/bin"
APP_ID=org.gpulab.gpulab
DEST="$SHARE/gpulab"
MANIFEST="$DEST/installed-files.txt"

refresh() {  # let the desktop see the change; each tool is optional
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$SHARE/applications" 2>/dev/null || true
  command -v update-mime-database >/dev/null 2>&1 && update-mime-database "$SHARE/mime" >/dev/null 2>&1 || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$SHARE/icons/hicolor" 2>/dev/null || true
  command -v xdg-desktop-menu >/dev/null 2>&1 && xdg-desktop-menu forceupdate 2>/dev/null || true
}

if [ "$ACTION" = uninstall ]; then
  if [ ! -f "$MANIFEST" ]; then
    echo "install.sh: gpulab is not installed under $PREFIX (no $MANIFEST)" >&2
    exit 1
  fi
  while IFS= read -r f; do
    [ -n "$f" ] && rm -f "$f"
  done < "$MANIFEST"
  rm -rf "$DEST"
  refresh
  echo "gpulab removed from $PREFIX"
  exit 0
fi

[ -x "$HERE/gpulab/gpulab" ] || { echo "install.sh: $HERE/gpulab/gpulab is missing; run me from the unpacked archive" >&2; exit 1; }
if [ -f "$MANIFEST" ]; then
  "$0" --prefix "$PREFIX" --uninstall >/dev/null  # replace an earlier version cleanly
fi
mkdir -p "$DEST" "$BIN" "$SHARE/applications" "$SHARE/metainfo" "$SHARE/mime/packages"
echo "Copying gpulab to $DEST/app"
cp -R "$HERE/gpulab" "$DEST/app.tmp"
rm -rf "$DEST/app"
mv "$DEST/app.tmp" "$DEST/app"
cp "$HERE/LICENSE" "$DEST/" 2>/dev/null || true
: > "$MANIFEST"

put() {  # put SRC DEST: copy a file and remember it for --uninstall
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2"
  echo "$2" >> "$MANIFEST"
}

EXE="$DEST/app/gpulab"
if [ -e "$BIN/gpulab" ] && [ ! -L "$BIN/gpulab" ]; then
  echo "  (left $BIN/gpulab alone: it is not ours, e.g. a pip install; the menu entry runs $EXE)"
else
  ln -sf "$EXE" "$BIN/gpulab"
  echo "$BIN/gpulab" >> "$MANIFEST"
fi

# the menu entry runs this copy by its full path (quoted: the path may hold spaces)
sed -e "s|^Exec=.*|Exec=\"$EXE\" %F|" -e "s|^TryExec=.*||" \
  "$HERE/share/applications/$APP_ID.desktop" > "$DEST/$APP_ID.desktop"
put "$DEST/$APP_ID.desktop" "$SHARE/applications/$APP_ID.desktop"
rm -f "$DEST/$APP_ID.desktop"
put "$HERE/share/metainfo/$APP_ID.metainfo.xml" "$SHARE/metainfo/$APP_ID.metainfo.xml"
put "$HERE/share/mime/packages/$APP_ID.xml" "$SHARE/mime/packages/$APP_ID.xml"
(cd "$HERE/share/icons" && find hicolor -type f) | while IFS= read -r icon; do
  put "$HERE/share/icons/$icon" "$SHARE/icons/$icon"
done
refresh

echo "gpulab $(cat "$HERE/VERSION" 2>/dev/null) installed:"
echo "  menu entry  $SHARE/applications/$APP_ID.desktop"
echo "  command     $BIN/gpulab"
case ":$PATH:" in *":$BIN:"*) ;; *) echo "  ($BIN is not on your PATH: add it, or start gpulab from the menu)";; esac
echo "Remove it with: $0 --uninstall$( [ "$PREFIX" = "$HOME/.local" ] || echo " --prefix $PREFIX")"
