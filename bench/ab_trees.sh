#!/usr/bin/env bash
# Source trees of several commits side by side, for A/B runs of one device call: each
# commit's src/ goes to DIR/NAME/src (NAME: the commit as given, '/' and '~' made '-').
# Point a run at one with PYTHONPATH=DIR/NAME/src (the bench scripts of the checkout stay
# the same). The device gets the trees only if they travel with the working tree: keep DIR
# inside the checkout and name it in the run's carried paths when it is git-ignored.
# Usage (here, before the device call): bash bench/ab_trees.sh ab 2d77e81 12122c8 HEAD
set -euo pipefail
DIR=${1:?usage: ab_trees.sh DIR COMMIT...}
shift
for rev in "$@"; do
  name=${rev//[\/~^]/-}
  rm -rf "${DIR:?}/$name"
  mkdir -p "$DIR/$name"
  git archive "$rev" src | tar -x -C "$DIR/$name"
  echo "$DIR/$name/src  ($(git rev-parse --short "$rev"))"
done
