# source .carry-live/setup.sh  -- a slim PySide6 6.11 (abi3) + pyqtgraph for offscreen Qt on the device.
# Unpacks to $QTC (default /tmp/qtcarry), never into /. System libs the host already has are
# dropped from the private lib dir, so the host's own copies are used where they exist.
QTC=${QTC:-/tmp/qtcarry}
_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$QTC" && tar -xJf "$_here/qt.tar.xz" -C "$QTC" || return 1
_kept=""
for f in "$QTC"/lib/*.so*; do
  n=$(basename "$f")
  if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f "$f"; else _kept="$_kept $n"; fi
done
echo "qtcarry: private system libs kept:${_kept:- none}"
export PYTHONPATH="$QTC/site${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="$QTC/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH="$QTC/site/PySide6/Qt/plugins" FONTCONFIG_FILE="$QTC/fonts.conf"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/qtcarry-xdg}; mkdir -p "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
