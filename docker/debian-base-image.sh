#!/usr/bin/env bash
# A base image for the Dockerfile made from Debian's packages, for a machine
# whose Docker engine reaches no image registry (so `FROM python:3.11-slim`
# cannot be pulled) but does reach a Debian mirror and a Python package index:
#
#   docker/debian-base-image.sh [TAG]          # default TAG: bvh-pick-base:bookworm
#   docker build --network host --build-arg BASE_IMAGE=bvh-pick-base:bookworm -t bvh-pick .
#
# debootstrap installs bookworm (whose python3 is 3.11, as python:3.11-slim's)
# with python3-venv; a virtualenv in /opt/python, first on PATH, gives the
# image `python` and `pip` as python:3.11-slim has them (Debian's own python3
# refuses `pip install` outside a virtualenv, PEP 668). This machine's pip
# configuration (/etc/pip.conf, /etc/xdg/pip/, root's ~/.config/pip and
# ~/.pip, $PIP_CONFIG_FILE, the PIP_* and proxy variables) and its CA bundle
# are copied in, so that pip inside `docker build --network host` reaches the
# same package index as pip here. Rebuild the image (`docker rmi TAG`) when
# that configuration changes. Needs root (debootstrap) and some 2 minutes.
# DEBIAN_MIRROR overrides the mirror (http://deb.debian.org/debian).
set -euo pipefail

tag=${1:-bvh-pick-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
for tool in debootstrap docker; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is not installed (apt-get install $tool)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "$0: debootstrap needs root" >&2; exit 2; }

root=$(mktemp -d /var/tmp/bvh-pick-base.XXXXXX)
trap 'rm -rf --one-file-system "$root"' EXIT
chmod 755 "$root"  # the image's /: mktemp made it 0700, which would lock every user but root out

debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$mirror"
chroot "$root" python3 -m venv /opt/python
# What apt fetched is not needed in the image: some 100 MB.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

# The pip configuration at the same paths inside (root's own files under
# /root: the Dockerfile's pip runs as root); then the CA bundles it and the
# environment name, over Debian's (this machine's may trust a proxy's CA).
copy_in() {
    [ -e "$1" ] || return 0
    mkdir -p "$root$(dirname "$2")"
    rm -rf --one-file-system "$root$2"  # not through a link in the image to a path of this machine
    cp -a "$1" "$root$2"
}
copy_in /etc/pip.conf /etc/pip.conf
copy_in /etc/xdg/pip /etc/xdg/pip
copy_in "$HOME/.config/pip" /root/.config/pip
copy_in "$HOME/.pip" /root/.pip
[ -z "${PIP_CONFIG_FILE:-}" ] || copy_in "$PIP_CONFIG_FILE" "$PIP_CONFIG_FILE"
bundles=(/etc/ssl/certs/ca-certificates.crt)
for variable in PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
    [ -z "${!variable:-}" ] || bundles+=("${!variable}")
done
while read -r bundle; do
    bundles+=("$bundle")
done < <(grep -hE '^\s*cert\s*=' /etc/pip.conf /etc/xdg/pip/pip.conf "$HOME/.config/pip/pip.conf" \
             "$HOME/.pip/pip.conf" ${PIP_CONFIG_FILE:+"$PIP_CONFIG_FILE"} 2>/dev/null | sed -E 's/^\s*cert\s*=\s*//')
for bundle in "${bundles[@]}"; do
    [ -f "$bundle" ] && copy_in "$(readlink -f "$bundle")" "$bundle"
done

# The image's environment: python:3.11-slim's PATH and LANG, and the pip and
# proxy variables set here (values in double quotes, as a Dockerfile's ENV reads them).
changes=(--change 'ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
         --change 'ENV LANG=C.UTF-8'
         --change 'CMD ["python3"]')
while IFS='=' read -r -d '' name value; do
    case "$name" in
        PIP_*|http_proxy|https_proxy|no_proxy|HTTP_PROXY|HTTPS_PROXY|NO_PROXY)
            value=${value//\\/\\\\}
            changes+=(--change "ENV $name=\"${value//\"/\\\"}\"");;
    esac
done < <(env -0)

tar --numeric-owner -C "$root" -c . \
    | docker import "${changes[@]}" \
        --message "debootstrap bookworm, python3 in /opt/python, this machine's pip configuration" - "$tag"
