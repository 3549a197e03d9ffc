"""logistic-regression: UNI's linear-probe protocol, multinomial logistic regression by L-BFGS."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_PATCH_CLASSIFICATION

# the hparams of UNI's linear probe: C (None: D*K/100), L-BFGS iterations, fit on train + validation
PROBE_HPARAMS: dict[str, Any] = {"C": None, "max_iter": 1000, "combine_trainval": True}


class LinearProbeHead(Generator):
    """A head of UNI's linear-probe protocol (logistic-regression, the slide-embedding probes),
    fitted when built on frozen features: the core training loop is not used."""

    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def fit_probe(self, features: Any, labels: Any, spec: GeneratorSpec, hp: dict[str, Any],
                  what: str) -> tuple[Any, Any, dict[str, Any]]:
        """UNI's linear probe on (features, labels): C = D*K/100 (K the classes seen) unless
        `hp["C"]` is given, fitted by `fit_lbfgs`. The (K, D) weight and (K,) bias cover every class
        of the task; a class without training cases (`what`: "patch", "slide") has bias -inf and is
        never predicted."""
        import torch

        from pathkit_generators._patch import n_classes

        k = n_classes(spec, labels, self.name)
        seen = sorted(set(labels.tolist()))
        if len(seen) < 2:
            raise PathkitError(f"{self.name}: every training {what} has class {seen[0]}; a classifier needs two")
        c = float(hp["C"]) if hp["C"] is not None else features.shape[1] * len(seen) / 100.0
        if c <= 0:
            raise PathkitError(f"{self.name}: C must be positive, got {c}")
        coef, intercept, n_iter = fit_lbfgs(features, labels, seen, c, int(hp["max_iter"]))
        weight, bias = torch.zeros(k, features.shape[1]), torch.full((k,), -torch.inf)
        rows = torch.as_tensor(seen)
        weight[rows], bias[rows] = coef.float(), intercept.float()
        return weight, bias, {"C": c, "n_iter": n_iter, "classes_seen": len(seen)}


class LogisticRegressionProbe(LinearProbeHead):
    """Multinomial (two classes: binary) logistic regression with C = D*K/100 (D feature
    dimension, K classes in the training labels) and max_iter 1000, fitted on train + validation
    as UNI's `eval_linear_probe` does by default (`combine_trainval`). The objective, the
    optimiser and its options are scikit-learn's `LogisticRegression(C, solver="lbfgs")` (mean
    cross-entropy + ||W||^2 / (2 C n), intercept unpenalised; SciPy's L-BFGS-B from zeros, stopping
    when the largest gradient component is below 1e-4), the loss and gradient computed with
    numpy: the same model without importing scikit-learn (docs/hepatobench.md). Fitted when the model is
    built: the core training loop is not used."""

    name: ClassVar[str] = "logistic-regression"
    description: ClassVar[str] = "L-BFGS logistic regression on frozen patch features (UNI: C = D*K/100)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {**PROBE_HPARAMS, "n_classes": None}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 4096}

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._patch import PatchHead, training_set

        hp = self.hparams(spec.hparams)
        feats, labels = training_set(spec, self.name, with_val=bool(hp["combine_trainval"]))
        weight, bias, fitted = self.fit_probe(feats, labels, spec, hp, "patch")

        class FittedLogisticRegression(PatchHead):
            name = "logistic-regression"

            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("weight", weight)
                self.register_buffer("bias", bias)

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                return (features @ self.weight.T + self.bias).softmax(dim=1)

            def export_state(self) -> dict[str, Any]:
                return dict(fitted)

        return FittedLogisticRegression()


# scikit-learn's L-BFGS settings for LogisticRegression (linear_model._logistic): gtol = tol
# 1e-4 (largest projected gradient component), ftol 64 machine epsilons, up to 50 line-search steps.
GRADIENT_TOL = 1e-4
FTOL = 64 * 2.220446049250313e-16
MAX_LINE_SEARCH = 50


def fit_lbfgs(features: Any, labels: Any, classes: list[int], c: float, max_iter: int) -> tuple[Any, Any, int]:
    """(coefficients (K, D), intercepts (K,), iterations) of the L2-regularised logistic
    regression scikit-learn's lbfgs solver fits: mean cross-entropy + ||W||^2 / (2 C n),
    intercepts unpenalised, minimised from zeros by SciPy's L-BFGS-B with scikit-learn's options.
    The loss and its gradient are computed in the features' precision, as scikit-learn does:
    float64 features in float64, anything else (the feature store's float16/float32) in float32,
    which scikit-learn's lbfgs keeps for float32 input (half the memory traffic of the two
    products over the features that make an iteration), the loss summed in float64. The two
    products run in torch (its thread count), the rest in numpy; while the solver runs, the
    OpenBLAS pools of numpy and SciPy are held to one thread: their idle workers spin, and beside
    torch's they would outnumber the cores (measured: docs/benchmarks.md). With two classes
    scikit-learn's binary form (one logit; returned as a zero row for the first class), else the
    multinomial one."""
    import numpy as np
    import torch
    from scipy.optimize import minimize
    from scipy.special import expit
    from threadpoolctl import threadpool_limits

    tensor_dtype = torch.float64 if features.dtype == torch.float64 else torch.float32
    dtype = np.float64 if tensor_dtype == torch.float64 else np.float32
    x = features.detach().to(device="cpu", dtype=tensor_dtype).contiguous()
    index = np.searchsorted(np.asarray(classes), labels.numpy(force=True).astype(np.int64))
    n, d = x.shape
    binary = len(classes) == 2
    rows = 1 if binary else len(classes)
    l2 = 1.0 / (c * n)
    every = np.arange(n)
    target = index.astype(dtype)

    def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        params = theta.reshape(rows, d + 1)
        w = torch.from_numpy(params[:, :d].astype(dtype))
        logits = torch.mm(x, w.T).numpy()
        logits += params[:, d].astype(dtype)
        if binary:
            z = logits[:, 0]
            loss = float(np.logaddexp(0, z).sum(dtype=np.float64) - np.dot(target, z).astype(np.float64))
            residual = (expit(z) - target)[:, None]
        else:
            top = logits.max(axis=1, keepdims=True)
            logits -= top
            residual = np.exp(logits)
            total = residual.sum(axis=1, keepdims=True)
            loss = float(np.log(total).sum(dtype=np.float64) - logits[every, index].sum(dtype=np.float64))
            residual /= total
            residual[every, index] -= 1
        grad = np.empty((rows, d + 1))
        grad[:, :d] = torch.mm(torch.from_numpy(np.ascontiguousarray(residual)).T, x).numpy()
        grad[:, :d] /= n
        grad[:, :d] += l2 * params[:, :d]
        grad[:, d] = residual.sum(axis=0, dtype=np.float64) / n
        penalty = float(np.dot(params[:, :d].ravel(), params[:, :d].ravel()))
        return loss / n + 0.5 * l2 * penalty, grad.ravel()

    with threadpool_limits(1, user_api="blas"):
        result = minimize(loss_and_gradient, np.zeros(rows * (d + 1)), method="L-BFGS-B", jac=True,
                          options={"maxiter": max_iter, "maxls": MAX_LINE_SEARCH, "gtol": GRADIENT_TOL,
                                   "ftol": FTOL})
    params = torch.from_numpy(result.x).view(rows, d + 1)
    coef, intercept = params[:, :d], params[:, d]
    if binary:  # the second class's logit against a zero one: softmax gives the binary probabilities
        coef = torch.cat([torch.zeros_like(coef), coef])
        intercept = torch.cat([torch.zeros_like(intercept), intercept])
    return coef, intercept, int(result.nit)


@hookimpl
def register_generators(register):
    register(LogisticRegressionProbe)
