#!/usr/bin/env bash
# Regenerates the fonts the PDF documents embed (README.md here says why these and
# what each covers). Run once by hand when the coverage must change; the output is
# committed. Needs Debian's fonts-dejavu-core and fonts-droid-fallback (apt-get
# download + dpkg-deb -x is enough, nothing is installed) and fontTools from PyPI in a
# throw-away virtual environment.
#
#   bash domain/src/documents/fonts/subset.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download fonts-dejavu-core fonts-droid-fallback >/dev/null 2>&1
for deb in ./*.deb; do dpkg-deb -x "$deb" x; done
python3 -m venv venv
venv/bin/pip install -q --disable-pip-version-check fonttools==4.55.3
dejavu="$(find x -name DejaVuSans.ttf | head -n 1)"
dejavu_bold="$(find x -name DejaVuSans-Bold.ttf | head -n 1)"
droid="$(find x -name DroidSansFallbackFull.ttf | head -n 1)"

# Latin (with Vietnamese), Greek, Cyrillic, Hebrew, Arabic (with its presentation
# forms and every OpenType feature, for joining), punctuation, currency signs.
latin="U+0000-024F,U+0250-02FF,U+0300-036F,U+0370-03FF,U+0400-04FF,U+0590-05FF,U+0600-06FF,U+0750-077F,U+1E00-1EFF,U+2000-206F,U+20A0-20CF,U+2100-214F,U+2190-21FF,U+2212,U+25CC,U+FB1D-FB4F,U+FB50-FDFF,U+FE70-FEFF,U+FFFD"
for pair in "$dejavu:DejaVuSans.ttf" "$dejavu_bold:DejaVuSans-Bold.ttf"; do
  venv/bin/pyftsubset "${pair%%:*}" --unicodes="$latin" --layout-features='*' \
    --no-hinting --drop-tables+=DSIG --name-IDs='*' --name-legacy \
    --output-file="$here/${pair##*:}" 2>/dev/null
done

# CJK: the ideographs, kana and Hangul of the national character sets (GB 2312,
# JIS X 0208, KS X 1001: 12,926 characters; every name a registry there accepts),
# CJK punctuation and full-width forms.
python3 - > cjk-unicodes.txt <<'PY'
chars = set()
for codec, lead, trail in [
    ("gb2312", range(0xA1, 0xF8), range(0xA1, 0xFF)),
    ("euc_jp", range(0xA1, 0xF5), range(0xA1, 0xFF)),
    ("euc_kr", range(0xA1, 0xFE), range(0xA1, 0xFF)),
]:
    for a in lead:
        for b in trail:
            try:
                c = bytes([a, b]).decode(codec)
            except UnicodeDecodeError:
                continue
            if len(c) == 1:
                chars.add(ord(c))
keep = sorted(c for c in chars if 0x3000 <= c <= 0x30FF or 0x3130 <= c <= 0x318F
              or 0x3400 <= c <= 0x9FFF or 0xAC00 <= c <= 0xD7AF or 0xFF00 <= c <= 0xFFEF)
print(",".join("U+%04X" % c for c in keep))
PY
venv/bin/pyftsubset "$droid" --unicodes-file=cjk-unicodes.txt --no-hinting \
  --drop-tables+=DSIG,GSUB,GPOS,kern --name-IDs='*' --name-legacy \
  --output-file="$here/DroidSansFallback-CJK.ttf" 2>/dev/null
ls -l "$here"/*.ttf
