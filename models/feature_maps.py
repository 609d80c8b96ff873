"""Feature maps phi: R^d -> R^m for linear attention.

A new map is one small class::

    @register("cos")
    class Cos(FeatureMap):
        def forward(self, x):
            return torch.cos(x)

``out_dim`` defaults to the head size; a map that changes it sets ``self.out_dim`` after
``super().__init__``. ``nonnegative`` says whether phi(q).phi(k) >= 0 always holds: only such
maps may be used with the z-denominator. Randomness, if any, lives in ``resample()`` alone.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from evalsuite.registry import Registry

FEATURE_MAPS = Registry("feature map", builtin_modules=["evalsuite.models.feature_maps"])
register = FEATURE_MAPS.register


class FeatureMap(nn.Module):
    nonnegative: ClassVar[bool] = True
    # The query/key size per head this map wants (None: the head size); linear attention projects
    # to it unless model.feature_dim is given. Expanding maps such as taylor set a small one.
    input_dim: ClassVar[int | None] = None

    def __init__(self, head_dim: int, **options):
        super().__init__()
        if options:
            raise TypeError(f"feature map {type(self).__name__} takes no options {sorted(options)}")
        self.head_dim = head_dim
        self.out_dim = head_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # Maps that treat queries and keys differently override these two.
    def forward_query(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def forward_key(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def resample(self) -> None:
        """Draw new random parameters (between training steps, never inside a sequence)."""

    def reset_parameters(self) -> None:
        """Initialise learned parameters; the model calls it after its generic weight init."""

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, out_dim={self.out_dim}"


class _Elu1(torch.autograd.Function):
    """phi = relu(x) + exp(min(x, 0)) with dphi/dx = min(phi, 1): 1 where x > 0 (phi = x + 1 > 1),
    phi itself where x <= 0 (phi = exp(x) <= 1), exactly the composed form's values and gradients,
    in one backward op (autograd's backward of clamp costs a comparison and a select on CPU)."""

    generate_vmap_rule = True  # grouped training batches it with torch.func.vmap

    @staticmethod
    def forward(x):
        return torch.exp(x.clamp(max=0)).add_(x.clamp(min=0))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (phi,) = ctx.saved_tensors
        return g * phi.clamp(max=1)


@register("elu1")
class Elu1(FeatureMap):
    """elu(x) + 1 (Katharopoulos et al. 2020) computed branch-wise, so that bf16 (and float32 below
    x ~ -17) never rounds exp(x) - 1 + 1 to 0: relu(x) + exp(min(x, 0)) is x + 1 for x >= 0 and
    exp(x) below; its gradient is min(phi, 1) (``_Elu1``). No torch.where: slow on CPU."""

    def forward(self, x):
        return _Elu1.apply(x)


@register("relu")
class ReLU(FeatureMap):
    """relu(x); the denominator can be 0, so eps matters."""

    def forward(self, x):
        return torch.relu(x)


@register("squared_relu")
class SquaredReLU(FeatureMap):
    """relu(x)^2."""

    def forward(self, x):
        return torch.relu(x).square()


@register("identity")
class Identity(FeatureMap):
    """phi(x) = x: plain (unnormalised) linear attention; may be negative."""

    nonnegative = False

    def forward(self, x):
        return x


@register("taylor")
class Taylor(FeatureMap):
    """Second-order Taylor expansion of exp (Based, Arora et al. 2024):
    phi(q).phi(k) = 1 + q.k/sqrt(d) + (q.k)^2/(2d), which is >= 1/2. Size 1 + d + d(d+1)/2;
    linear attention projects queries and keys to ``input_dim`` = 16 for it (as Based does) unless
    ``model.feature_dim`` says otherwise: at head size 64 the map would have 2,145 features."""

    input_dim: ClassVar[int | None] = 16

    def __init__(self, head_dim: int):
        super().__init__(head_dim)
        self.out_dim = 1 + head_dim + head_dim * (head_dim + 1) // 2
        i, j = torch.triu_indices(head_dim, head_dim)               # pairs i <= j
        self.register_buffer("pairs", i * head_dim + j, persistent=False)
        # x_i x_j appears twice in (q.k)^2 for i < j, once on the diagonal: weight the diagonal 1/sqrt(2)
        weight = torch.ones(len(i), dtype=torch.float64)
        weight[i == j] = 2 ** -0.5  # float64, so float64 inputs keep their precision
        self.register_buffer("pair_weight", weight, persistent=False)

    def forward(self, x):
        xs = x / self.head_dim ** 0.25
        outer = (xs[..., :, None] * xs[..., None, :]).flatten(-2)       # index_select: cheap backward on CPU
        second = outer.index_select(-1, self.pairs) * self.pair_weight.to(x.dtype)
        return torch.cat([torch.ones_like(x[..., :1]), xs, second], dim=-1)


@register("rebased")
class ReBased(FeatureMap):
    """ReBased (Aksenov et al. 2024, "Linear Transformers with Learnable Kernel Functions are Better
    In-Context Models"): the query or key is normalised over the head (zero mean, unit variance),
    then scaled and shifted by learned gamma and beta (separate for queries and keys, starting at 1
    and 0), z = gamma * norm(x) + beta, and the kernel is the square of their dot product,
    phi(q).phi(k) = (z_q . z_k)^2: Based's Taylor map less its constant and linear terms, so a query
    can give a key zero weight. Features z_i z_j for i <= j (the off-diagonal ones weighted sqrt 2),
    size d(d+1)/2; queries and keys are projected to ``input_dim`` = 16 as for Taylor."""

    input_dim: ClassVar[int | None] = 16
    EPS = 1e-5

    def __init__(self, head_dim: int):
        super().__init__(head_dim)
        self.out_dim = head_dim * (head_dim + 1) // 2
        self.query_gamma, self.key_gamma = nn.Parameter(torch.ones(head_dim)), nn.Parameter(torch.ones(head_dim))
        self.query_beta, self.key_beta = nn.Parameter(torch.zeros(head_dim)), nn.Parameter(torch.zeros(head_dim))
        i, j = torch.triu_indices(head_dim, head_dim)               # pairs i <= j
        self.register_buffer("pairs", i * head_dim + j, persistent=False)
        weight = torch.full((len(i),), 2 ** 0.5, dtype=torch.float64)  # z_i z_j appears twice in (z.z')^2 for i < j
        weight[i == j] = 1.0
        self.register_buffer("pair_weight", weight, persistent=False)

    def reset_parameters(self):
        with torch.no_grad():
            for g, b in ((self.query_gamma, self.query_beta), (self.key_gamma, self.key_beta)):
                if g.is_meta:
                    return
                g.fill_(1.0)
                b.zero_()

    def _phi(self, x, gamma, beta):
        z = torch.nn.functional.layer_norm(x, (self.head_dim,), eps=self.EPS) * gamma.to(x.dtype) + beta.to(x.dtype)
        outer = (z[..., :, None] * z[..., None, :]).flatten(-2)           # [..., d * d]
        return outer.index_select(-1, self.pairs) * self.pair_weight.to(x.dtype)

    def forward(self, x):
        return self._phi(x, self.query_gamma, self.query_beta)

    def forward_query(self, x):
        return self._phi(x, self.query_gamma, self.query_beta)

    def forward_key(self, x):
        return self._phi(x, self.key_gamma, self.key_beta)


@register("dpfp")
class DPFP(FeatureMap):
    """Deterministic parameter-free projection (Schlag et al. 2021): r = [relu(x), relu(-x)],
    phi = concat over j = 1..nu of r * roll(r, j). Size 2 d nu; capacity grows with nu."""

    def __init__(self, head_dim: int, nu: int = 1):
        super().__init__(head_dim)
        if not isinstance(nu, int) or not 1 <= nu < 2 * head_dim:
            raise ValueError(f"dpfp option nu must be an integer in [1, {2 * head_dim - 1}] for head size {head_dim}, got {nu!r}")
        self.nu = nu
        self.out_dim = 2 * head_dim * nu

    def forward(self, x):
        r = torch.cat([torch.relu(x), torch.relu(-x)], dim=-1)  # the paper's relu(-x), not -relu(x)
        return torch.cat([r * torch.roll(r, shifts=j, dims=-1) for j in range(1, self.nu + 1)], dim=-1)

    def extra_repr(self):
        return f"{super().extra_repr()}, nu={self.nu}"


@register("performer")
class Performer(FeatureMap):
    """FAVOR+ positive random features (Choromanski et al. 2021) estimating exp(q.k / sqrt(d)).

    ``forward`` is the unbiased estimator. Inside normalised attention the features are
    exp(exponent) shifted per query and per feature (``sequence_shift``: ``ops.shifted_features``,
    and a running maximum with a rescaled state when decoding) so that every denominator
    phi(q_t).z_t is at least 1; the ratio phi(q).S / phi(q).z is invariant to those shifts, so the
    output is the exact ratio estimator at any head size. ``forward_query`` / ``forward_key``
    alone shift by the query's row maximum and by the sequence's largest key exponent.
    The random matrix is a buffer (saved with the model) that only ``resample()`` changes."""

    def __init__(self, head_dim: int, n_features: int | None = None, orthogonal: bool = True):
        super().__init__(head_dim)
        n_features = head_dim if n_features is None else n_features
        if not isinstance(n_features, int) or n_features < 1:
            raise ValueError(f"performer option n_features must be a positive integer, got {n_features!r}")
        self.n_features, self.orthogonal = n_features, orthogonal
        self.out_dim = 2 * n_features
        self.register_buffer("projection", torch.empty(n_features, head_dim))
        self.resample()

    @torch.no_grad()
    def resample(self, generator: torch.Generator | None = None) -> None:
        if self.projection.is_meta:
            return
        d, m = self.head_dim, self.n_features
        g = torch.randn(m, d, generator=generator)
        if self.orthogonal:  # blocks of orthonormal rows, rescaled to Gaussian row norms
            blocks = [torch.linalg.qr(torch.randn(d, d, generator=generator))[0].T for _ in range(-(-m // d))]
            g = torch.cat(blocks)[:m] * g.norm(dim=1, keepdim=True)
        self.projection.copy_(g)

    def _exponent(self, x):
        x = x / self.head_dim ** 0.25
        u = x @ self.projection.T.to(x.dtype)
        half_sq = x.square().sum(-1, keepdim=True) / 2
        return torch.cat([u - half_sq, -u - half_sq], dim=-1)

    def forward(self, x):
        return torch.exp(self._exponent(x)) / math.sqrt(2 * self.n_features)

    def forward_query(self, x):
        e = self._exponent(x)
        return torch.exp(e - e.amax(-1, keepdim=True).detach())

    # The layer shifts exponents per query and feature (ops.shifted_features). A fixed key shift
    # cannot serve every head size: at d >= 64 the worst-case bound |w|^2/2 sat ~25 nats above
    # typical exponents and phi(q).z fell under eps, so the layer computed num/eps.
    sequence_shift = True

    def query_exponent(self, x):
        """log of the query features, up to the constant 1/sqrt(2m) (cancels in the ratio)."""
        return self._exponent(x)

    key_exponent = query_exponent

    def forward_key(self, x):
        """Keys of whole sequences ``[..., T, d]``, shifted by the sequence's largest exponent."""
        e = self._exponent(x)
        return torch.exp(e - e.detach().amax(dim=(-2, -1), keepdim=True))

    def extra_repr(self):
        return f"{super().extra_repr()}, n_features={self.n_features}, orthogonal={self.orthogonal}"


@register("hedgehog")
class Hedgehog(FeatureMap):
    """Learned map (Zhang et al. 2024): y = W x + b, phi = softmax([y, -y]); W starts at the
    identity and b at zero. Queries and keys get their own W unless ``tie_qk``."""

    def __init__(self, head_dim: int, tie_qk: bool = False):
        super().__init__(head_dim)
        self.out_dim = 2 * head_dim
        self.tie_qk = tie_qk
        self.query_proj = nn.Linear(head_dim, head_dim)
        self.key_proj = self.query_proj if tie_qk else nn.Linear(head_dim, head_dim)
        self.reset_parameters()

    def reset_parameters(self):
        for proj in (self.query_proj, self.key_proj):
            if proj.weight.is_meta:
                return
            with torch.no_grad():
                proj.weight.copy_(torch.eye(self.head_dim))
                proj.bias.zero_()

    @staticmethod
    def _phi(y):
        return torch.softmax(torch.cat([y, -y], dim=-1), dim=-1)

    def forward(self, x):
        return self._phi(self.query_proj(x))

    def forward_query(self, x):
        return self._phi(self.query_proj(x))

    def forward_key(self, x):
        return self._phi(self.key_proj(x))


def names() -> list[str]:
    return FEATURE_MAPS.names()


@dataclass(frozen=True)
class MapSpec:
    """A feature map reference with its options, built once per layer by ``get``."""

    ref: Any
    options: dict = field(default_factory=dict)


def map_options(cls: type) -> dict[str, object]:
    """A feature-map class's options (its constructor's parameters after ``head_dim``) and defaults."""
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]
    return {p.name: p.default for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def get(ref, head_dim: int, **options) -> FeatureMap:
    """Build a feature map from a name, a ``module:Attr`` / ``file.py:Attr`` ref, a class, a
    ``MapSpec`` or an instance."""
    if isinstance(ref, FeatureMap):
        return ref
    if isinstance(ref, MapSpec):
        ref, options = ref.ref, {**ref.options, **options}
    cls = FEATURE_MAPS.get(ref)
    if not (isinstance(cls, type) and issubclass(cls, FeatureMap)):
        raise TypeError(f"feature map {ref!r} must be a subclass of evalsuite.models.feature_maps.FeatureMap")
    accepted = list(map_options(cls))
    unknown = sorted(set(options) - set(accepted))
    if unknown and not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values()):
        raise TypeError(f"feature map {ref!r} has no option(s) {', '.join(unknown)}; "
                        f"its options: {', '.join(accepted) or 'none'}")
    fmap = cls(head_dim, **options)
    if not isinstance(getattr(fmap, "out_dim", None), int) or fmap.out_dim < 1:
        raise TypeError(f"feature map {ref!r} must set a positive integer out_dim")
    return fmap
