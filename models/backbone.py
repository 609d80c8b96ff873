"""The language-model backbone every mixer plugs into.

token embedding (+ learned or sinusoidal absolute positions; rotary ones act inside attention
mixers, models/positions.py) -> n_layers x [pre-norm mixer block, optional
pre-norm MLP block] -> final norm -> output head tied to the embedding. An optional short causal
depthwise convolution runs before each mixer (the Based/DeltaNet recipe that makes small models
learn recall quickly).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import ConfigDict, Field
from torch import nn

from evalsuite.params import Params

from . import positions as pe
from .conv import causal_depthwise_conv
from .feature_maps import FeatureMap


class MixerOptions(Params):
    """Options specific to one mixer; subclasses add fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BackboneOptions(Params):
    model_config = ConfigDict(extra="forbid", frozen=True)

    positions: Literal["learned", "none", "sinusoidal", "rope", "xpos"] = Field(
        "learned", description="learned absolute positions; none (order comes from the convolution); sinusoidal absolute; "
                               "rope or xpos (rotary, on the queries and keys of attention layers)")
    max_len: int | None = Field(None, ge=1, description="longest sequence for learned positions (default: the task's seq_len)")
    mlp_ratio: float = Field(0.0, ge=0, description="MLP hidden size / d_model; 0 disables the MLP")
    conv_kernel: int = Field(4, ge=0, le=16, description="short causal depthwise convolution before each mixer; 0 disables")
    readout: Literal["causal", "autoencoder"] = Field(
        "causal", description="causal: logits at every position (a language model); autoencoder: every position "
                              "decoded from the last position's hidden state plus a sinusoidal position, through a "
                              "2-layer MLP (MAD's compression model)")

    LATE_FIELDS = frozenset({"readout"})


@dataclass
class AttentionView:
    """What a mixer does to one sequence, as analysis sees it: ``output = weights @ values``.

    weights ``[B, H, T, T]`` (row t: how much each position j <= t contributes to output t),
    keys ``[B, H, T, m]`` (the vectors written to the memory: feature-mapped keys for linear
    attention), values ``[B, H, T, dv]``. ``raw_keys [B, H, T, d]`` are the projections before
    the map and ``key_map`` the map itself (``None``: the keys are raw, the map the identity), so
    that interference can be measured in both spaces and against random keys sent through it.

    A mixer that writes ``substeps`` n > 1 times per token (DeltaProduct) has one column per write:
    weights ``[B, H, T, T n]``, keys and values ``[B, H, T n, d]``, token j's write s at column
    n j + s; ``token_columns`` and ``per_token`` read such a view by token."""

    weights: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    raw_keys: torch.Tensor | None = None
    key_map: Callable[[torch.Tensor], torch.Tensor] | None = None
    substeps: int = 1

    def token_columns(self, mask: torch.Tensor) -> torch.Tensor:
        """A mask or weight over tokens ``[..., T]`` spread over their columns ``[..., T n]``."""
        return mask if self.substeps == 1 else mask.repeat_interleave(self.substeps, dim=-1)

    def columns(self, tokens: torch.Tensor) -> torch.Tensor:
        """The columns of token indices ``[k]``: ``[k n]`` (every write of each)."""
        if self.substeps == 1:
            return tokens
        return (tokens[:, None] * self.substeps + torch.arange(self.substeps, device=tokens.device)).flatten()

    def per_token(self, rows: torch.Tensor) -> torch.Tensor:
        """|weights| of rows ``[..., T n]`` summed over each token's writes: ``[..., T]`` (the rows
        themselves when n = 1)."""
        return rows if self.substeps == 1 else rows.abs().unflatten(-1, (-1, self.substeps)).sum(-1)


class Mixer(nn.Module):
    """Maps ``x [B, T, d_model]`` to ``[B, T, d_model]`` causally.

    Subclasses set ``Options`` (their own settings) and implement ``forward`` and
    ``state_size(seq_len)``: the exact number of floats kept per sequence to decode the next token."""

    Options: ClassVar[type[MixerOptions]] = MixerOptions
    uses_feature_map: ClassVar[bool] = False
    rotary: ClassVar[bool] = False  # applies ``self.rotary_kind`` (rope / xpos) to its queries and keys
    # the one-layer memory a capacity probe uses for this mixer (``models.memory``), or why it has none
    memory: ClassVar[type | None] = None
    no_memory: ClassVar[str] = "it defines no one-layer memory (models/memory.py) for the capacity probe"

    def __init__(self, d_model: int, n_heads: int, options: MixerOptions, feature_map=None):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.options = options
        self.rotary_kind: str | None = None  # set by the LanguageModel when positions are rotary

    def rotate(self, q, k, start: int = 0):
        """Queries and keys ``[B, H, T, d]`` at positions ``start ..``, rotated when positions are rotary."""
        if self.rotary_kind is None:
            return q, k
        return pe.rotate(q, start, self.rotary_kind, "q"), pe.rotate(k, start, self.rotary_kind, "k")

    def split_heads(self, x):  # [B, T, H*d] -> [B, H, T, d]
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, -1).transpose(1, 2)

    @staticmethod
    def merge_heads(x):  # [B, H, T, d] -> [B, T, H*d]
        B, H, T, d = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d)

    def state_size(self, seq_len: int) -> int:
        raise NotImplementedError

    def key_features(self) -> int | None:
        """d' (d_k): the size of a head's state along the key side (the feature map's output size for
        linear attention, the query/key size for the delta rule and decayed mixers); None where the
        state grows with the sequence (softmax, a window). About d' pairs is what the state holds
        under squared-error retrieval (Schlag et al. 2021); read by argmax, as a language model
        reads it, the value side counts too (``value_features``; capacity-argmax measures both)."""
        return None

    def value_features(self) -> int | None:
        """d_v: the size of a head's state along the value side (``value_dim``), None where the state
        grows with the sequence."""
        return None

    def read(self, o: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        """What the heads read, ``o [B, H, T, d]`` (an attention view's ``weights @ values``), as
        the mixer's output ``[B, T, d_model]`` given its input ``x [B, T, d_model]``: the output
        projection (a mixer that normalises or gates its reads first overrides this)."""
        return self.out(self.merge_heads(o))

    def attention(self, x: torch.Tensor) -> AttentionView:
        """The explicit mixing matrix for ``x [B, T, d_model]`` (analysis; T x T memory)."""
        raise NotImplementedError(f"{type(self).__name__} does not expose its attention weights")

    # Recurrent decoding: a mixer that can run as an RNN (or with a KV cache) implements both.
    def init_state(self, batch: int, max_len: int, device=None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement step-by-step decoding")

    def step(self, x: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        """One token: ``x [B, d_model]`` -> ``([B, d_model], new state)``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step-by-step decoding")

    @classmethod
    def build_layers(cls, d_model: int, n_heads: int, n_layers: int, options: MixerOptions, feature_map=None) -> list[Mixer]:
        """The mixers of all layers; a hybrid overrides this to mix kinds."""
        return [cls(d_model, n_heads, options, feature_map=feature_map) for _ in range(n_layers)]


class ShortConv(nn.Module):
    """Causal depthwise convolution over time; keeps kernel-1 past inputs when decoding.

    The parameters are those of ``nn.Conv1d(d, d, k, groups=d)`` (``conv.weight [d, 1, k]``,
    ``conv.bias [d]``); the forward pass is ``conv.causal_depthwise_conv`` over ``[B, T, d]``, k
    in-place multiply-adds with a backward of its own (no transposes, no per-tap temporaries): it
    matches ``conv1d`` in float64, values and gradients (tests/models/test_conv.py)."""

    def __init__(self, d_model: int, kernel: int):
        super().__init__()
        self.kernel = kernel
        self.conv = nn.Conv1d(d_model, d_model, kernel, groups=d_model, padding=kernel - 1)

    def forward(self, x):
        return causal_depthwise_conv(x, self.conv.weight[:, 0].t(), self.conv.bias)  # taps [k, d]

    def step(self, x, past):
        """``x [B, d]``, ``past [B, kernel - 1, d]`` (the previous inputs) -> (y, new past)."""
        window = torch.cat([past, x[:, None]], dim=1)               # [B, kernel, d]
        y = (window * self.conv.weight[:, 0].T).sum(1) + self.conv.bias
        return y, window[:, 1:]


class Block(nn.Module):
    def __init__(self, d_model: int, mixer: Mixer, conv_kernel: int, mlp_ratio: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.conv = ShortConv(d_model, conv_kernel) if conv_kernel else None
        self.mixer = mixer
        hidden = int(round(mlp_ratio * d_model))
        self.mlp = None
        if hidden:
            self.norm2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))

    def forward(self, x):
        h = self.norm1(x)
        if self.conv is not None:
            h = self.conv(h)
        x = x + self.mixer(h)
        if self.mlp is not None:
            x = x + self.mlp(self.norm2(x))
        return x

    def state_size(self, seq_len: int) -> int:
        conv = (self.conv.kernel - 1) * self.mixer.d_model if self.conv is not None else 0
        return self.mixer.state_size(seq_len) + conv

    def init_state(self, batch: int, max_len: int, device=None):
        conv = (torch.zeros(batch, self.conv.kernel - 1, self.mixer.d_model, device=device)
                if self.conv is not None else None)
        return conv, self.mixer.init_state(batch, max_len, device)

    def step(self, x, state):
        conv_state, mixer_state = state
        h = self.norm1(x)
        if self.conv is not None:
            h, conv_state = self.conv.step(h, conv_state)
        y, mixer_state = self.mixer.step(h, mixer_state)
        x = x + y
        if self.mlp is not None:
            x = x + self.mlp(self.norm2(x))
        return x, (conv_state, mixer_state)


class LanguageModel(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, mixers: list[Mixer], backbone: BackboneOptions):
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        self.backbone = backbone
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = None
        if backbone.positions == "learned":
            if backbone.max_len is None:
                raise ValueError("positions='learned' needs max_len (the longest sequence the model will see)")
            self.pos = nn.Embedding(backbone.max_len, d_model)
        if backbone.positions in pe.ROTARY:
            takers = [m for m in mixers if m.rotary]
            if not takers:
                raise ValueError(f"positions={backbone.positions!r} rotates the queries and keys of attention layers, "
                                 f"and these layers ({', '.join(sorted({type(m).__name__ for m in mixers}))}) have none; "
                                 f"use positions=sinusoidal, learned or none")
            for m in takers:  # a hybrid's attention layers; its fixed-state layers keep the convolution's order
                m.rotary_kind = backbone.positions
        self.blocks = nn.ModuleList(Block(d_model, m, backbone.conv_kernel, backbone.mlp_ratio) for m in mixers)
        self.norm = nn.LayerNorm(d_model)
        self.decoder = None
        if backbone.readout == "autoencoder":  # MAD's AutoEncoder decoder: norm, linear, GELU, twice, then a norm
            self.decoder = nn.Sequential(nn.RMSNorm(d_model), nn.Linear(d_model, d_model), nn.GELU(),
                                         nn.RMSNorm(d_model), nn.Linear(d_model, d_model), nn.GELU(), nn.RMSNorm(d_model))
        self.apply(_init_weights)
        for module in self.modules():  # learned feature maps start from their own init (hedgehog: identity)
            if isinstance(module, FeatureMap):
                module.reset_parameters()

    def hidden(self, inputs: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states ``[n, T, d_model]``; ``head`` turns them into logits."""
        x = self.embed(inputs)
        if self.pos is not None:
            T = inputs.shape[1]
            if T > self.pos.num_embeddings:
                raise ValueError(f"sequence length {T} exceeds the {self.pos.num_embeddings} learned positions "
                                 f"this model was built with; use model.positions=none to test length extrapolation")
            x = x + self.pos.weight[:T]
        elif self.backbone.positions == "sinusoidal":
            x = x + pe.sinusoidal(torch.arange(inputs.shape[1], device=inputs.device), self.d_model).to(x.dtype)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        if self.decoder is None:
            return x
        T = inputs.shape[1]
        code = x[:, -1:]                                                       # [n, 1, d]: the sequence's encoding
        where = pe.sinusoidal(torch.arange(T, device=inputs.device), self.d_model).to(x.dtype)   # [T, d]
        return self.decoder(code + where)                                      # [n, T, d]: each position decoded

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(h, self.embed.weight)  # tied output head

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(inputs))

    def state_size(self, seq_len: int) -> int:
        """Floats kept per sequence to decode the token after ``seq_len`` tokens, all layers."""
        return sum(block.state_size(seq_len) for block in self.blocks)

    def init_state(self, batch: int, max_len: int | None = None, device=None) -> dict:
        """Empty decoding state; ``max_len`` sizes KV caches (fixed-state mixers ignore it)."""
        max_len = max_len or (self.pos.num_embeddings if self.pos is not None else 4096)
        return {"t": 0, "layers": [b.init_state(batch, max_len, device) for b in self.blocks]}

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, state: dict) -> tuple[torch.Tensor, dict]:
        """Decode one token per sequence: ``tokens [B]`` -> ``(logits [B, vocab], new state)``.

        Linear and delta layers carry a fixed-size state; softmax layers a KV cache."""
        if self.decoder is not None:
            raise ValueError("readout='autoencoder' decodes every position from the whole sequence's encoding: it has "
                             "no token-by-token decoding")
        t = state["t"]
        x = self.embed(tokens)
        if self.pos is not None:
            if t >= self.pos.num_embeddings:
                raise ValueError(f"position {t} exceeds the {self.pos.num_embeddings} learned positions")
            x = x + self.pos.weight[t]
        elif self.backbone.positions == "sinusoidal":
            x = x + pe.sinusoidal(torch.tensor([t], device=tokens.device), self.d_model)[0].to(x.dtype)
        layers = []
        for block, layer_state in zip(self.blocks, state["layers"]):
            x, layer_state = block.step(x, layer_state)
            layers.append(layer_state)
        return self.head(self.norm(x)), {"t": t + 1, "layers": layers}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _init_weights(module):
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
