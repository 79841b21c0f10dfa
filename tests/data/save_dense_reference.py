"""Save dense-path references computed at main (7b5913d).

Run by hand from the project root, with 7b5913d's tree first on ``PYTHONPATH``, only to make
new references on purpose: ``python tests/data/save_dense_reference.py [PLATFORM]`` saves
``tests/data/dense_reference[.PLATFORM].npz`` (see ``tests/saved_references.py``); importing it
(pytest's doctest collection does) saves nothing.
"""

import sys

import numpy as np

from rruletest.finite_differences import central_fdm, jacobian_estimate, vjp_estimate
from rruletest.testers import _reference as ref

sys.path.insert(0, "tests")
from dense_cases import CASES


def main() -> None:
    out = {}
    for name, (f, xs, ybar, dots) in CASES.items():
        ests = vjp_estimate(None, f, ybar, *xs)
        for k, e in enumerate(ests):
            out[f"{name}/vjp{k}/value"] = np.asarray(e.value)
            out[f"{name}/vjp{k}/error"] = np.asarray(e.error)
        y = f(*xs)
        est = ref.dense_jvp(central_fdm(5, 1), f, xs, dots, y)
        out[f"{name}/jvp/value"] = np.asarray(est.value)
        out[f"{name}/jvp/error"] = np.asarray(est.error)
        for k, e in enumerate(jacobian_estimate(None, f, *xs)):
            out[f"{name}/jac{k}/value"] = e.value
            out[f"{name}/jac{k}/error"] = e.error
            out[f"{name}/jac{k}/step"] = e.step
    suffix = "".join(f".{p}" for p in sys.argv[1:2])
    np.savez_compressed(f"tests/data/dense_reference{suffix}.npz", **out)
    print(len(out))


if __name__ == "__main__":
    main()
