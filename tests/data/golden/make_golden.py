#!/usr/bin/env python3
"""Golden tensors for mold's parity tests (tests/torch/golden_parity_test.cpp).

Runs the reference implementations (diffusers' and transformers' own model
files, imported from checkouts given on the command line) on seeded random
weights at mold's built-in "tiny" sizes, and writes one safetensors file per
architecture into tests/data/golden/: the weights under their checkpoint
names, the inputs as golden.input.*, the reference outputs as golden.output.*,
and in the metadata the reference (repository, commit, file, class) and the
config given to it.

Only the model files are imported from the checkouts; the packages around them
(diffusers' and transformers' __init__, hub, loading and config machinery) are
replaced by the small stand-ins below, as is what torch 1.13 lacks. The
stand-ins carry no model arithmetic except:
  - scaled_dot_product_attention (torch >= 2.0): softmax(q k^T * scale + mask) v,
    as PyTorch documents it, and diffusers' native attention dispatch around
    it (a permute to (B, H, S, D) and back, a 2-D mask as (B, 1, 1, S));
  - for transformers: the causal and padding mask of the eager attention
    (make_causal_mask), the hidden-state collection of output_hidden_states
    (record_hidden_states, for Qwen3Model's check_model_inputs) and the default
    rotary frequencies (_default_rope_parameters), each as transformers
    defines it;
  - torch 1.13 shims that change no value: `with torch.device("cpu")` as a
    no-op context, int32 RoPE position ids indexed as int64.
The configs are plain objects holding the values written to each file's
metadata.

Weights are seeded (seed_weights); an embedding table of the real vocabulary
is kept only at the rows the cases use (keep_embedding_rows: the other rows are
zero when the reference runs, and the test rebuilds the table so). Before a
file is written the script checks its outputs (finite, not constant) and the
reference against itself (a batch item alone equals it in the batch, valid
tokens alone equal them padded, a masked padding differs from an unmasked
one), and reads the file back.

Usage (Debian 12's python3-torch and python3-numpy):

  /usr/bin/python3 tests/data/golden/make_golden.py \
      --diffusers DIFFUSERS_SRC --diffusers-commit SHA \
      --transformers TRANSFORMERS_SRC --transformers-commit SHA \
      [--transformers-qwen25vl-commit SHA] [--out tests/data/golden] \
      [--only NAME ...] [--half-weights]

DIFFUSERS_SRC is a diffusers checkout's src/ (holding diffusers/models/...);
TRANSFORMERS_SRC is a directory holding transformers/models/qwen3/
modeling_qwen3.py and transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py
(a checkout's src/, or the two files alone: nothing else of transformers is
read). The commits are recorded in the files' metadata; the Qwen2.5-VL file
may come from another commit than the Qwen3 one (--transformers-qwen25vl-commit).
"""

import argparse
import contextlib
import functools
import importlib
import importlib.util
import json
import logging as std_logging
import math
import os
import struct
import sys
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------
# torch 1.13 polyfills
# ---------------------------------------------------------------------------


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention as PyTorch documents it
    (dropout 0): softmax(q k^T * scale + bias) v, with a bool mask meaning
    "may attend" and a float mask added."""
    assert dropout_p == 0.0
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    L, S = query.size(-2), key.size(-2)
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1), value)


if not hasattr(F, "scaled_dot_product_attention"):
    F.scaled_dot_product_attention = _sdpa
if not hasattr(torch, "compiler"):
    torch.compiler = types.SimpleNamespace(
        is_compiling=lambda: False, is_exporting=lambda: False, disable=lambda *a, **k: (lambda f: f)
    )
if not hasattr(nn, "RMSNorm"):

    class _NoTorchRMSNorm(nn.Module):  # only for isinstance() checks
        pass

    nn.RMSNorm = _NoTorchRMSNorm



class _TorchWithDeviceContext(types.ModuleType):
    """torch for a model file that uses `with torch.device("cpu"):` (a
    context manager from torch 2.0 on): the same module, whose device() also
    enters and leaves (a no-op: torch 1.13 makes every tensor on the cpu
    unless told otherwise)."""

    class _Device:
        def __init__(self, *args):
            self.device = torch.device(*args)

        def __enter__(self):
            assert self.device.type == "cpu"
            return self.device

        def __exit__(self, *exc):
            return False

    def __getattr__(self, name):
        return getattr(torch, name)

    device = _Device


def with_device_context(module):
    if not hasattr(torch.device("cpu"), "__enter__"):
        module.torch = _TorchWithDeviceContext("torch")
    return module


# ---------------------------------------------------------------------------
# Module stand-ins
# ---------------------------------------------------------------------------


def _identity_decorator(*args, **kwargs):
    """@dec or @dec(...) that leaves the function as it is."""
    if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], str):
        return args[0]
    return lambda f: f


class _Anything:
    """A class for names the model files import but never run."""

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        pass


def _stub_module(name, attrs=None, path=None, default=None):
    """A module registered under `name` holding `attrs`; other attributes are
    `default(attr)` when given (the model files import names they never use)."""
    module = types.ModuleType(name)
    module.__dict__.update(attrs or {})
    if path is not None:
        module.__path__ = [path]
    if default is not None:
        module.__getattr__ = lambda attr: default(attr) if not attr.startswith("__") else (_ for _ in ()).throw(
            AttributeError(attr)
        )
    sys.modules[name] = module
    if "." in name:
        parent, _, child = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)
    return module


def _default_attr(attr):
    if attr.startswith("is_") and attr.endswith("_available"):
        return lambda *a, **k: False
    if attr[:1].isupper():
        return type(attr, (_Anything,), {})
    return _identity_decorator


def _compare_torch_version(operation, version):
    ours = tuple(int(p) for p in torch.__version__.split("+")[0].split("a")[0].split(".")[:3])
    theirs = tuple(int(p) for p in version.split(".")[:3])
    return {
        "<": ours < theirs,
        "<=": ours <= theirs,
        ">": ours > theirs,
        ">=": ours >= theirs,
        "==": ours == theirs,
        "!=": ours != theirs,
    }[operation]


def _get_logger(name=None):
    logger = std_logging.getLogger(name)
    if not hasattr(logger, "warning_once"):
        logger.warning_once = logger.warning
    return logger


_logging = types.SimpleNamespace(get_logger=_get_logger)


class _FrozenConfig(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)


class _ConfigMixin:
    """diffusers' ConfigMixin as far as the models use it: self.config.<arg>."""

    @property
    def config(self):
        return self.__dict__["_internal_dict"]


def _register_to_config(init):
    import inspect

    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop("self")
        object.__setattr__(self, "_internal_dict", _FrozenConfig(values))
        init(self, *args, **kwargs)

    return wrapper


class _ModelMixin(nn.Module):
    pass


def _deprecate(*args, take_from=None, standard_warn=True, stacklevel=2):
    values = ()
    deprecated = args if isinstance(args[0], tuple) else (args,)
    for attribute, _version, _message in deprecated:
        if isinstance(take_from, dict) and attribute in take_from:
            values += (take_from.pop(attribute),)
    if len(values) == 1:
        return values[0]
    return values if values else None


def _dispatch_attention_fn(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
    attention_kwargs=None,
    *,
    backend=None,
    parallel_config=None,
):
    """diffusers' dispatch_attention_fn with its default (native) backend:
    (B, S, H, D) in and out, a 2-D mask taken as (B, 1, 1, S_k)."""
    if attn_mask is not None and attn_mask.ndim == 2 and attn_mask.shape[0] == query.shape[0] and attn_mask.shape[
        1
    ] == key.shape[1]:
        attn_mask = attn_mask.unsqueeze(1).unsqueeze(1)
    query, key, value = (x.permute(0, 2, 1, 3) for x in (query, key, value))
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale
    )
    return out.permute(0, 2, 1, 3)


def _randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
    return torch.randn(shape, generator=generator, device=device, dtype=dtype)


def install_diffusers(src):
    """Registers the diffusers package of `src` without running its __init__
    files; the model files are then imported as they are."""
    root = os.path.join(src, "diffusers")
    if not os.path.isfile(os.path.join(root, "models", "transformers", "transformer_z_image.py")):
        sys.exit(f"{src}: no diffusers/models/transformers/transformer_z_image.py there")
    _stub_module("diffusers", {"__version__": "reference"}, path=root)
    for package in ("models", "models/transformers", "models/autoencoders", "models/unets"):
        _stub_module("diffusers." + package.replace("/", "."), path=os.path.join(root, package))
    utils = _stub_module(
        "diffusers.utils",
        {
            "deprecate": _deprecate,
            "logging": _logging,
            "is_torch_version": _compare_torch_version,
            "apply_lora_scale": lambda kwargs_name="joint_attention_kwargs": (lambda f: f),
            "USE_PEFT_BACKEND": False,
        },
        path=os.path.join(root, "utils"),
        default=_default_attr,
    )
    _stub_module(
        "diffusers.utils.import_utils",
        {"is_torch_version": _compare_torch_version, "is_torch_available": lambda: True},
        default=_default_attr,
    )
    _stub_module(
        "diffusers.utils.torch_utils",
        {
            "maybe_allow_in_graph": lambda cls: cls,
            "lru_cache_unless_export": lambda maxsize=128, typed=False: functools.lru_cache(maxsize=maxsize, typed=typed),
            "is_torch_version": _compare_torch_version,
            "randn_tensor": _randn_tensor,
            "maybe_adjust_dtype_for_device": lambda dtype, device=None: dtype,
        },
        default=_default_attr,
    )
    _stub_module("diffusers.utils.accelerate_utils", {"apply_forward_hook": lambda method: method})
    _stub_module("diffusers.utils.constants", {}, default=lambda attr: None)
    # BaseOutput is diffusers' own (utils/outputs.py), imported as it is.
    utils.BaseOutput = importlib.import_module("diffusers.utils.outputs").BaseOutput
    _stub_module(
        "diffusers.configuration_utils",
        {"ConfigMixin": _ConfigMixin, "register_to_config": _register_to_config, "FrozenDict": _FrozenConfig},
    )
    _stub_module("diffusers.loaders", {}, default=_default_attr)
    _stub_module("diffusers.loaders.single_file_model", {}, default=_default_attr)
    _stub_module("diffusers.image_processor", {}, default=_default_attr)
    _stub_module("diffusers.models.modeling_utils", {"ModelMixin": _ModelMixin})
    _stub_module("diffusers.models.attention_dispatch", {"dispatch_attention_fn": _dispatch_attention_fn},
                 default=_default_attr)
    _stub_module("diffusers.models._modeling_parallel", {}, default=_default_attr)
    _stub_module("diffusers.models.cache_utils", {}, default=_default_attr)
    # Imported by unet_2d_blocks.py for blocks the VAEs do not build.
    _stub_module("diffusers.models.transformers.transformer_2d", {}, default=_default_attr)
    _stub_module("diffusers.models.transformers.dual_transformer_2d", {}, default=_default_attr)



class _Config(types.SimpleNamespace):
    """A transformers config as far as the model files read it."""

    def get_text_config(self, *args, **kwargs):
        return getattr(self, "text_config", self)


class _PreTrainedModel(nn.Module):
    """transformers' PreTrainedModel as far as these models use it."""

    def __init__(self, config, *args, **kwargs):
        super().__init__()
        self.config = config

    @classmethod
    def _from_config(cls, config, **kwargs):
        return cls(config)

    def post_init(self):
        pass

    def get_input_embeddings(self):
        return self.embed_tokens

    @property
    def dtype(self):
        return next(self.parameters()).dtype


class _ModelOutput:
    """transformers' ModelOutput as far as these models use it."""

    def __getitem__(self, key):
        if isinstance(key, str):
            return getattr(self, key)
        return self.to_tuple()[key]

    def to_tuple(self):
        import dataclasses

        return tuple(getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None)


def _model_output(name, fields):
    import dataclasses

    return dataclasses.make_dataclass(name, [(f, object, None) for f in fields], bases=(_ModelOutput,))


def _default_rope_parameters(config, device=None, seq_len=None):
    """modeling_rope_utils' default rotary ("rope_type": "default"):
    1 / theta^(2i/d) over the head width, no attention scaling."""
    base = config.rope_theta
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, 1.0


def make_causal_mask(config, input_embeds, attention_mask, cache_position, past_key_values=None, position_ids=None,
                     **kwargs):
    """masking_utils.create_causal_mask for the eager attention without a
    cache: a float (B, 1, L, L) mask, 0 where key j may be seen by query i
    (j <= i and attention_mask[b, j] nonzero), torch.finfo(dtype).min
    elsewhere (masking_utils.eager_mask over sdpa_mask's causal and padding
    functions, allow_is_causal_skip off)."""
    assert config._attn_implementation == "eager" and past_key_values is None
    b, length = input_embeds.shape[:2]
    q = cache_position.view(-1, 1)
    kv = torch.arange(length, device=input_embeds.device).view(1, -1)
    allowed = (kv <= q).view(1, 1, length, length).expand(b, 1, length, length)
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool().view(b, 1, 1, length)
    zero = torch.tensor(0.0, dtype=input_embeds.dtype)
    return torch.where(allowed, zero, torch.finfo(input_embeds.dtype).min)


def record_hidden_states(forward):
    """utils.generic.check_model_inputs as far as output_hidden_states goes:
    hidden_states is the first recorded layer's input, then every recorded
    layer's output (the classes in _can_record_outputs["hidden_states"]), the
    last of them replaced by the model's last_hidden_state."""

    @functools.wraps(forward)
    def wrapper(self, *args, output_hidden_states=False, **kwargs):
        recorded, patched = [], []
        if output_hidden_states:
            layer_class = self._can_record_outputs["hidden_states"]
            for module in self.modules():
                if isinstance(module, layer_class):
                    original = module.forward

                    def capture(*a, _original=original, **k):
                        if not recorded:
                            recorded.append(a[0])
                        out = _original(*a, **k)
                        recorded.append(out[0] if isinstance(out, tuple) else out)
                        return out

                    module.forward = capture
                    patched.append((module, original))
        try:
            outputs = forward(self, *args, **kwargs)
        finally:
            for module, original in patched:
                module.forward = original
        if output_hidden_states:
            outputs.hidden_states = tuple(recorded[:-1]) + (outputs.last_hidden_state,)
        return outputs

    return wrapper


class _Unpack:
    def __class_getitem__(cls, item):
        return cls


def install_transformers(src):
    """Registers a transformers package whose model files are those of `src`
    (transformers/models/qwen3/modeling_qwen3.py and
    transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py) and whose library
    around them is the stand-ins above."""
    root = os.path.join(src, "transformers")
    for model in ("qwen3/modeling_qwen3.py", "qwen2_5_vl/modeling_qwen2_5_vl.py"):
        if not os.path.isfile(os.path.join(root, "models", model)):
            sys.exit(f"{src}: no transformers/models/{model} there")
    _stub_module("transformers", {"__version__": "reference"}, path=root)
    _stub_module("transformers.models", path=os.path.join(root, "models"))
    _stub_module("transformers.models.qwen3", path=os.path.join(root, "models", "qwen3"))
    _stub_module("transformers.models.qwen2_5_vl", path=os.path.join(root, "models", "qwen2_5_vl"))
    _stub_module("transformers.models.qwen3.configuration_qwen3", {"Qwen3Config": _Config})
    _stub_module(
        "transformers.models.qwen2_5_vl.configuration_qwen2_5_vl",
        {"Qwen2_5_VLConfig": _Config, "Qwen2_5_VLTextConfig": _Config, "Qwen2_5_VLVisionConfig": _Config},
    )
    activations = {"silu": nn.SiLU, "gelu": nn.GELU}
    _stub_module("transformers.activations", {"ACT2FN": types.MappingProxyType(
        {k: v() for k, v in activations.items()})})
    _stub_module("transformers.cache_utils", {}, default=_default_attr)
    _stub_module("transformers.generation", {}, default=_default_attr)
    _stub_module(
        "transformers.integrations",
        {
            "use_kernel_forward_from_hub": lambda name: (lambda cls: cls),
            "use_kernel_func_from_hub": lambda name: (lambda f: f),
            "use_kernelized_func": lambda *funcs: (lambda cls: cls),
        },
    )
    _stub_module(
        "transformers.masking_utils",
        {"create_causal_mask": make_causal_mask, "create_sliding_window_causal_mask": None},
    )
    _stub_module("transformers.modeling_flash_attention_utils", {"FlashAttentionKwargs": dict})
    _stub_module("transformers.modeling_layers", {"GradientCheckpointingLayer": nn.Module}, default=_default_attr)
    _stub_module(
        "transformers.modeling_outputs",
        {
            "ModelOutput": _ModelOutput,
            "BaseModelOutputWithPast": _model_output(
                "BaseModelOutputWithPast", ["last_hidden_state", "past_key_values", "hidden_states", "attentions"]
            ),
            "CausalLMOutputWithPast": _model_output(
                "CausalLMOutputWithPast", ["loss", "logits", "past_key_values", "hidden_states", "attentions"]
            ),
        },
    )
    _stub_module(
        "transformers.modeling_rope_utils",
        {"ROPE_INIT_FUNCTIONS": {"default": _default_rope_parameters}, "dynamic_rope_update": lambda f: f},
    )
    _stub_module("transformers.modeling_utils", {"ALL_ATTENTION_FUNCTIONS": {}, "PreTrainedModel": _PreTrainedModel})
    _stub_module("transformers.processing_utils", {"Unpack": _Unpack})
    _stub_module(
        "transformers.utils",
        {
            "TransformersKwargs": dict,
            "auto_docstring": _identity_decorator,
            "can_return_tuple": lambda f: f,
            "is_torchdynamo_compiling": lambda: False,
            "logging": _logging,
        },
        path=os.path.join(root, "utils"),
    )
    _stub_module(
        "transformers.utils.generic",
        {"check_model_inputs": record_hidden_states, "maybe_autocast": lambda **kwargs: contextlib.nullcontext()},
    )


# ---------------------------------------------------------------------------
# Weights, files
# ---------------------------------------------------------------------------


# --half-weights: every weight rounded to a float16 value before the reference
# runs (it still computes in float32) and stored as F16: half the bytes, the
# same float32 arithmetic on both sides (mold loads F16 into float32 exactly).
HALF_WEIGHTS = False


def seed_weights(model, seed):
    """Seeded weights that keep activations O(1): matrices and convolution
    kernels N(0, 1/fan_in), norm scales 1 + N(0, 0.1^2), biases and norm
    shifts N(0, 0.05^2), embedding tables and learned tokens N(0, 1)."""
    generator = torch.Generator().manual_seed(seed)
    norm_types = (nn.LayerNorm, nn.GroupNorm)
    norm_names = set()
    for name, module in model.named_modules():
        kind = type(module).__name__
        if isinstance(module, norm_types) or "Norm" in kind or kind.endswith("RMS_norm"):
            for pname, _ in module.named_parameters(recurse=False):
                norm_names.add(f"{name}.{pname}" if name else pname)
    embeddings = {
        f"{name}.weight" for name, module in model.named_modules() if isinstance(module, nn.Embedding)
    }
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float32)
            if name in embeddings:
                value = noise
            elif name in norm_names:
                value = 0.05 * noise if name.endswith("bias") else 1.0 + 0.1 * noise
            elif name.endswith("bias"):
                value = 0.05 * noise
            elif p.dim() >= 2 and not name.endswith("pad_token"):
                value = noise / math.sqrt(p[0].numel())
            else:
                value = noise
            if HALF_WEIGHTS:
                value = value.half().float()
            p.copy_(value)


_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """The safetensors format: an 8-byte little-endian header length, the JSON
    header (dtype, shape, data_offsets per tensor; __metadata__ strings),
    padded with spaces to a multiple of 8, then the raw little-endian bytes."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        if t.dtype not in _DTYPES:
            raise TypeError(f"{name}: {t.dtype}")
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """The tensors and metadata of a file write_safetensors made (a check)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    metadata = header.pop("__metadata__", {})
    types_ = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        out[name] = torch.from_numpy(
            np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=types_[h["dtype"]]).reshape(h["shape"]).copy()
        )
    return out, metadata


class Golden:
    """What one file holds: weights, inputs and outputs by case, metadata."""

    def __init__(self, name, reference, config):
        self.name = name
        self.tensors = {}
        self.metadata = {"reference": reference, "config": config}

    def weights(self, state_dict, prefix=""):
        for k, v in state_dict.items():
            self.tensors[prefix + k] = _weight_as_stored(v)

    def input(self, case, name, value):
        self.tensors[f"golden.input.{case}.{name}"] = _as_stored(value)

    def output(self, case, name, value):
        self.tensors[f"golden.output.{case}.{name}"] = _as_stored(value)

    def write(self, directory):
        path = os.path.join(directory, self.name + ".safetensors")
        write_safetensors(path, self.tensors, self.metadata)
        back, metadata = read_safetensors(path)
        assert set(back) == set(self.tensors) and metadata["reference"]
        for k, v in self.tensors.items():
            assert torch.equal(back[k], v), k
        return path, os.path.getsize(path)


def _weight_as_stored(value):
    value = value.detach().float()
    if HALF_WEIGHTS:
        assert torch.equal(value.half().float(), value), "a weight that float16 does not hold"
        return value.half().contiguous()
    return value.clone().contiguous()


def _as_stored(value):
    value = value.detach()
    if value.dtype == torch.bool or not value.is_floating_point():
        return value.to(torch.int64).contiguous()
    return value.to(torch.float32).contiguous()


def reference_of(repo, commit, src_root, file, cls):
    """Where the reference is: the file's path in its repository (both keep
    their package under src/)."""
    path = "src/" + os.path.relpath(file, src_root).replace(os.sep, "/")
    return {"repo": repo, "commit": commit, "file": path, "class": cls}


def sane(label, t):
    """The checks a golden output must pass: finite, not constant, not ~0."""
    t = t.detach().float()
    assert torch.isfinite(t).all(), f"{label}: not finite"
    std = t.std().item()
    assert std > 1e-3, f"{label}: nearly constant (std {std})"
    print(f"    {label}: shape {list(t.shape)}, mean {t.mean().item():+.4f}, std {std:.4f}")


def relative_l2(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def agree(label, a, b, same=True):
    """A self-check of the reference: two ways to the same numbers agree (to
    float32 rounding), or two inputs that must differ do."""
    error = relative_l2(a.detach().float(), b.detach().float())
    if same:
        assert error < 1e-5, f"{label}: relative L2 {error}"
    else:
        assert error > 1e-3, f"{label}: relative L2 only {error}"
    print(f"    check {label}: relative L2 {error:.2e} ({'same' if same else 'differs'})")


# ---------------------------------------------------------------------------
# 1. Z-Image transformer (diffusers ZImageTransformer2DModel)
# ---------------------------------------------------------------------------

ZIMAGE_TRANSFORMER_CONFIG = {
    "all_patch_size": [2],
    "all_f_patch_size": [1],
    "in_channels": 16,
    "dim": 64,
    "n_layers": 2,
    "n_refiner_layers": 1,
    "n_heads": 2,
    "n_kv_heads": 2,
    "norm_eps": 1e-05,
    "qk_norm": True,
    "cap_feat_dim": 32,
    "siglip_feat_dim": None,
    "rope_theta": 256.0,
    "t_scale": 1000.0,
    "axes_dims": [8, 12, 12],
    "axes_lens": [1536, 512, 512],
}


def zimage_transformer(args):
    module = with_device_context(importlib.import_module("diffusers.models.transformers.transformer_z_image"))
    if not getattr(module.RopeEmbedder, "_long_ids", False):
        # torch 1.13 indexes with int64 only; the positions are int32 there.
        call = module.RopeEmbedder.__call__
        module.RopeEmbedder.__call__ = lambda self, ids: call(self, ids.long())
        module.RopeEmbedder._long_ids = True
    model = module.ZImageTransformer2DModel(**ZIMAGE_TRANSFORMER_CONFIG).eval()
    seed_weights(model, 101)
    g = Golden(
        "zimage_transformer",
        reference_of("huggingface/diffusers", args.diffusers_commit, args.diffusers, module.__file__,
                     "ZImageTransformer2DModel"),
        ZIMAGE_TRANSFORMER_CONFIG,
    )
    g.weights(model.state_dict())
    gen = torch.Generator().manual_seed(102)
    # Cases: (latent shape, timesteps, caption length L, valid rows per item).
    # "single": one item, 11 of 11 caption tokens valid (padded to 32 with
    # cap_pad_token), 2x3 patches (padded to 32 with x_pad_token).
    # "batch": two items on a non-square 3x5-patch latent; captions of 5 and
    # 40 valid tokens (padded to 32 and 64: the first item's keys beyond 32
    # are batch padding, masked), the second item's valid rows not at the
    # start of its text (rows 3..42 of 45).
    cases = {
        "single": ((1, 16, 4, 6), [0.35], 11, [list(range(11))]),
        "batch": ((2, 16, 6, 10), [0.2, 0.85], 45, [list(range(5)), list(range(3, 43))]),
    }
    outputs = {}
    for case, (shape, timesteps, length, valid) in cases.items():
        latents = torch.randn(shape, generator=gen)
        text = torch.randn((shape[0], length, 32), generator=gen)
        mask = torch.zeros((shape[0], length), dtype=torch.bool)
        for i, rows in enumerate(valid):
            mask[i, rows] = True
        t = torch.tensor(timesteps, dtype=torch.float32)
        with torch.no_grad():
            out = model(
                [latents[i].unsqueeze(1) for i in range(shape[0])],  # (C, F=1, H, W)
                t,
                [text[i][mask[i]] for i in range(shape[0])],
                return_dict=False,
            )[0]
        out = torch.stack([o.squeeze(1) for o in out])  # (B, C, H, W)
        for name, value in (("latents", latents), ("timestep", t), ("text", text), ("text_mask", mask)):
            g.input(case, name, value)
        g.output(case, "sample", out)
        sane(f"{case}.sample", out)
        outputs[case] = out
        if shape[0] > 1:
            for i in range(shape[0]):
                with torch.no_grad():
                    alone = model([latents[i].unsqueeze(1)], t[i : i + 1], [text[i][mask[i]]], return_dict=False)[0]
                agree(f"{case} item {i} alone = in the batch", alone[0].squeeze(1), out[i])
    return g





def keep_embedding_rows(golden, name, table, ids):
    """An embedding table of the real vocabulary is too large to store: only
    the rows of the ids the cases use are kept. Every other row of `table` is
    zeroed (before the reference runs, so that it computes with exactly the
    table the test rebuilds), and the file holds the kept rows under the
    checkpoint name with their row numbers as golden.rows_of.<name>."""
    rows = torch.unique(torch.cat([i.flatten() for i in ids])).sort().values
    with torch.no_grad():
        kept = table[rows].clone()
        table.zero_()
        table[rows] = kept
    golden.tensors[name] = _weight_as_stored(kept)
    golden.tensors["golden.rows_of." + name] = rows.to(torch.int64)


# ---------------------------------------------------------------------------
# 2. Qwen3 text encoder of Z-Image (transformers Qwen3Model)
# ---------------------------------------------------------------------------

QWEN3_CONFIG = {
    "model_type": "qwen3",
    "vocab_size": 151936,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    "attention_bias": False,
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "layer_types": ["full_attention"] * 3,
    "pad_token_id": None,
    "_attn_implementation": "eager",
}


def qwen3_text_encoder(args):
    module = importlib.import_module("transformers.models.qwen3.modeling_qwen3")
    config = _Config(**QWEN3_CONFIG, use_cache=False, output_hidden_states=False, output_attentions=False)
    model = module.Qwen3Model(config).eval()
    seed_weights(model, 201)
    g = Golden(
        "zimage_qwen3_text_encoder",
        reference_of("huggingface/transformers", args.transformers_commit, args.transformers, module.__file__,
                     "Qwen3Model"),
        QWEN3_CONFIG,
    )
    # The published text_encoder/ is a Qwen3ForCausalLM checkpoint: Qwen3Model's
    # names under "model.".
    g.weights(model.state_dict(), prefix="model.")
    gen = torch.Generator().manual_seed(202)
    # Cases: token ids (chat-template ids and random ones), right padded as
    # the Z-Image pipeline pads (padding="max_length"); what is compared is
    # hidden_states[-2] (the second-to-last layer's output, which the
    # pipeline conditions on) at the valid tokens.
    # "single": one prompt of 6 tokens, no padding.
    # "padded_batch": prompts of 7 and 4 tokens, the second padded to 7
    # (pad id 151643, attention_mask 0).
    template = [151644, 872, 198]
    cases = {
        "single": ([template + torch.randint(0, 151936, (3,), generator=gen).tolist()], [6]),
        "padded_batch": (
            [
                template + torch.randint(0, 151936, (4,), generator=gen).tolist(),
                template + torch.randint(0, 151936, (1,), generator=gen).tolist() + [151643] * 3,
            ],
            [7, 4],
        ),
    }
    inputs = {}
    for case, (ids, valid) in cases.items():
        input_ids = torch.tensor(ids, dtype=torch.int64)
        mask = torch.zeros_like(input_ids)
        for i, n in enumerate(valid):
            mask[i, :n] = 1
        inputs[case] = (input_ids, mask)
    keep_embedding_rows(g, "model.embed_tokens.weight", model.embed_tokens.weight.data,
                        [ids for ids, _ in inputs.values()])
    for case, (input_ids, mask) in inputs.items():
        with torch.no_grad():
            out = model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True)
        hidden = out.hidden_states[-2]
        assert len(out.hidden_states) == QWEN3_CONFIG["num_hidden_layers"] + 1
        g.input(case, "input_ids", input_ids)
        g.input(case, "attention_mask", mask)
        g.output(case, "hidden_states_-2", hidden)
        sane(f"{case}.hidden_states_-2", hidden[mask.bool()])
        for i in range(input_ids.shape[0]):
            n = int(mask[i].sum())
            if n < input_ids.shape[1]:
                with torch.no_grad():
                    alone = model(input_ids=input_ids[i : i + 1, :n], output_hidden_states=True).hidden_states[-2]
                agree(f"{case} item {i}: valid tokens = the prompt alone", alone[0], hidden[i, :n])
    return g


# ---------------------------------------------------------------------------
# 5. Qwen2.5-VL text encoder of Qwen-Image (transformers Qwen2_5_VLModel)
# ---------------------------------------------------------------------------

QWEN25VL_TEXT_CONFIG = {
    "model_type": "qwen2_5_vl_text",
    "vocab_size": 152064,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "hidden_act": "silu",
    "max_position_embeddings": 128000,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    # What Qwen2_5_VLConfig makes of the published {"type": "mrope",
    # "mrope_section": [...]}: the default rotary with the sections.
    "rope_scaling": {"type": "default", "rope_type": "default", "mrope_section": [2, 3, 3]},
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "layer_types": ["full_attention"] * 2,
    "pad_token_id": None,
    "_attn_implementation": "eager",
}
QWEN25VL_VISION_CONFIG = {
    "model_type": "qwen2_5_vl",
    "depth": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "in_channels": 3,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "spatial_merge_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [1],
    "out_hidden_size": 64,
    "hidden_act": "silu",
    "tokens_per_second": 2,
    "_attn_implementation": "eager",
}
QWEN25VL_IDS = {
    "image_token_id": 151655,
    "video_token_id": 151656,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
}


def qwen25vl_text_encoder(args):
    module = importlib.import_module("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl")
    flags = {"use_cache": False, "output_hidden_states": False, "output_attentions": False, "use_return_dict": True}
    text_config = _Config(**QWEN25VL_TEXT_CONFIG, **flags)
    vision_config = _Config(**QWEN25VL_VISION_CONFIG)
    config = _Config(text_config=text_config, vision_config=vision_config, **QWEN25VL_IDS, **flags)
    model = module.Qwen2_5_VLModel(config).eval()
    seed_weights(model, 501)
    g = Golden(
        "qwen25vl_text_encoder",
        reference_of("huggingface/transformers", args.transformers_qwen25vl_commit or args.transformers_commit,
                     args.transformers, module.__file__, "Qwen2_5_VLModel"),
        {"text_config": QWEN25VL_TEXT_CONFIG, "vision_config": QWEN25VL_VISION_CONFIG, **QWEN25VL_IDS},
    )
    # The checkpoint's names (Qwen2_5_VLForConditionalGeneration as stored):
    # the language model under "model.", the tower under "visual.".
    state = model.state_dict()
    g.weights({k[len("language_model."):]: v for k, v in state.items() if k.startswith("language_model.")}, "model.")
    g.weights({k: v for k, v in state.items() if k.startswith("visual.")})
    gen = torch.Generator().manual_seed(502)
    # Text cases, what Qwen-Image's pipeline runs (hidden_states[-1], the
    # final norm's output; compared at the valid tokens):
    # "text": one prompt of 8 tokens.
    # "padded_batch": prompts of 9 and 5 tokens, the second right padded
    # (positions count the real tokens: get_rope_index with the mask).
    # "left_padded": one prompt of 6 tokens after 3 pads (left padding: the
    # valid tokens' positions start at 0 after the pads).
    # Image case "images" (the edit pipelines' prompt): batch 1, a 10x4-patch
    # image (5x2 merged tokens: two attention windows of 4 rows and 1 row in
    # block 0, the whole image in block 1) and a 2x2-patch one (1 token),
    # each after vision_start; outputs hidden_states[-1] and the vision
    # tower's merged features.
    template = [151644, 8948, 198]
    rand = lambda n: torch.randint(0, 151643, (n,), generator=gen).tolist()
    text_cases = {
        "text": ([template + rand(5)], [[1] * 8]),
        "padded_batch": ([template + rand(6), template + rand(2) + [151643] * 4], [[1] * 9, [1] * 5 + [0] * 4]),
        "left_padded": ([[151643] * 3 + template + rand(3)], [[0] * 3 + [1] * 6]),
    }
    grids = [(1, 10, 4), (1, 2, 2)]
    image_ids = [151644, 872, 198, 151652] + [151655] * 10 + [151653] + rand(2) + [151652, 151655, 151653] + rand(3)
    image_ids += [151645]
    all_ids = [torch.tensor(ids) for ids, _ in text_cases.values()] + [torch.tensor(image_ids)]
    keep_embedding_rows(g, "model.embed_tokens.weight", model.language_model.embed_tokens.weight.data, all_ids)
    for case, (ids, mask) in text_cases.items():
        input_ids = torch.tensor(ids, dtype=torch.int64)
        attention_mask = torch.tensor(mask, dtype=torch.int64)
        with torch.no_grad():
            out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        hidden = out.hidden_states[-1]
        assert torch.equal(hidden, out.last_hidden_state)
        g.input(case, "input_ids", input_ids)
        g.input(case, "attention_mask", attention_mask)
        g.output(case, "hidden_states_-1", hidden)
        sane(f"{case}.hidden_states_-1", hidden[attention_mask.bool()])
        for i in range(input_ids.shape[0]):
            valid = attention_mask[i].bool()
            if not valid.all():
                with torch.no_grad():
                    alone = model(input_ids=input_ids[i : i + 1, valid], output_hidden_states=True).hidden_states[-1]
                agree(f"{case} item {i}: valid tokens = the prompt alone", alone[0], hidden[i, valid])
    patches = sum(t * h * w for t, h, w in grids)
    pixel_values = torch.randn((patches, 3 * 2 * 14 * 14), generator=gen)
    grid_thw = torch.tensor(grids, dtype=torch.int64)
    input_ids = torch.tensor([image_ids], dtype=torch.int64)
    with torch.no_grad():
        features = torch.cat(model.get_image_features(pixel_values, grid_thw), dim=0)
        out = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values=pixel_values,
                    image_grid_thw=grid_thw, output_hidden_states=True)
    g.input("images", "input_ids", input_ids)
    g.input("images", "pixel_values", pixel_values)
    g.input("images", "image_grid_thw", grid_thw)
    g.output("images", "vision_features", features)
    g.output("images", "hidden_states_-1", out.hidden_states[-1])
    sane("images.vision_features", features)
    with torch.no_grad():
        first = model.get_image_features(pixel_values[:40], grid_thw[:1])[0]
        second = model.get_image_features(pixel_values[40:], grid_thw[1:])[0]
        windows = model.visual.get_window_index(grid_thw[:1])[1]
    assert windows == [0, 32, 40], windows  # two windows in block 0: 8 and 2 merged tokens
    agree("images: each image's features alone = together", torch.cat([first, second]), features)
    sane("images.hidden_states_-1", out.hidden_states[-1])
    return g

# ---------------------------------------------------------------------------
# 3. FLUX VAE of Z-Image (diffusers AutoencoderKL)
# ---------------------------------------------------------------------------

FLUX_VAE_CONFIG = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ["DownEncoderBlock2D"] * 4,
    "up_block_types": ["UpDecoderBlock2D"] * 4,
    "block_out_channels": [32, 32, 64, 64],
    "layers_per_block": 2,
    "act_fn": "silu",
    "latent_channels": 16,
    "norm_num_groups": 32,
    "sample_size": 1024,
    "scaling_factor": 0.3611,
    "shift_factor": 0.1159,
    "latents_mean": None,
    "latents_std": None,
    "force_upcast": True,
    "use_quant_conv": False,
    "use_post_quant_conv": False,
    "mid_block_add_attention": True,
}


def flux_vae(args):
    module = importlib.import_module("diffusers.models.autoencoders.autoencoder_kl")
    model = module.AutoencoderKL(**FLUX_VAE_CONFIG).eval()
    seed_weights(model, 301)
    g = Golden(
        "zimage_flux_vae",
        reference_of("huggingface/diffusers", args.diffusers_commit, args.diffusers, module.__file__, "AutoencoderKL"),
        FLUX_VAE_CONFIG,
    )
    g.weights(model.state_dict())
    gen = torch.Generator().manual_seed(302)
    # encode: a non-square image in [-1, 1] -> latent_dist.mode() (the mean,
    # in the model's own latent space: no shift or scale); decode: a latent
    # of the model's own space -> the image (no clamp in this model).
    image = torch.rand((1, 3, 32, 24), generator=gen) * 2 - 1
    latent = torch.randn((1, 16, 3, 4), generator=gen)
    with torch.no_grad():
        mean = model.encode(image).latent_dist.mode()
        decoded = model.decode(latent).sample
    g.input("encode", "image", image)
    g.output("encode", "latent", mean)
    g.input("decode", "latent", latent)
    g.output("decode", "image", decoded)
    sane("encode.latent", mean)
    sane("decode.image", decoded)
    return g


# ---------------------------------------------------------------------------
# 6. Qwen-Image VAE (diffusers AutoencoderKLQwenImage)
# ---------------------------------------------------------------------------

QWEN_IMAGE_VAE_CONFIG = {
    "base_dim": 8,
    "z_dim": 16,
    "dim_mult": [1, 2, 4, 4],
    "num_res_blocks": 2,
    "attn_scales": [],
    "temperal_downsample": [False, True, True],
    "dropout": 0.0,
    "input_channels": 3,
}


def qwen_image_vae(args):
    module = importlib.import_module("diffusers.models.autoencoders.autoencoder_kl_qwenimage")
    model = module.AutoencoderKLQwenImage(**QWEN_IMAGE_VAE_CONFIG).eval()
    seed_weights(model, 601)
    with torch.no_grad():
        # Smaller output weights: the decoder clamps to [-1, 1], and a
        # comparison of mostly clamped values would say little.
        model.decoder.conv_out.weight.mul_(0.5)  # exact: a power of two
    config = dict(QWEN_IMAGE_VAE_CONFIG, latents_mean=model.config.latents_mean, latents_std=model.config.latents_std)
    g = Golden(
        "qwen_image_vae",
        reference_of("huggingface/diffusers", args.diffusers_commit, args.diffusers, module.__file__,
                     "AutoencoderKLQwenImage"),
        config,
    )
    g.weights(model.state_dict())
    gen = torch.Generator().manual_seed(602)
    # One frame: (B, C, 1, H, W) for the reference, (B, C, H, W) for mold.
    # encode: image -> latent_dist.mode() (the mean after quant_conv, in the
    # model's own latent space); decode: latent -> image, clamped to [-1, 1].
    image = torch.rand((2, 3, 24, 32), generator=gen) * 2 - 1
    latent = torch.randn((1, 16, 4, 3), generator=gen)
    with torch.no_grad():
        mean = model.encode(image.unsqueeze(2)).latent_dist.mode().squeeze(2)
        decoded = model.decode(latent.unsqueeze(2)).sample.squeeze(2)
    g.input("encode", "image", image)
    g.output("encode", "latent", mean)
    g.input("decode", "latent", latent)
    g.output("decode", "image", decoded)
    sane("encode.latent", mean)
    sane("decode.image", decoded)
    with torch.no_grad():
        alone = model.encode(image[1:].unsqueeze(2)).latent_dist.mode().squeeze(2)
    agree("encode item 1 alone = in the batch", alone, mean[1:])
    clamped = (decoded.abs() >= 1.0).float().mean().item()
    print(f"    decode.image: {100 * clamped:.1f}% of the values clamped")
    assert clamped < 0.2
    return g

# ---------------------------------------------------------------------------
# 4. Qwen-Image transformer (diffusers QwenImageTransformer2DModel)
# ---------------------------------------------------------------------------

QWEN_IMAGE_TRANSFORMER_CONFIG = {
    "patch_size": 2,
    "in_channels": 64,
    "out_channels": 16,
    "num_layers": 2,
    "attention_head_dim": 32,
    "num_attention_heads": 2,
    "joint_attention_dim": 64,
    "guidance_embeds": False,
    "axes_dims_rope": [8, 12, 12],
    "zero_cond_t": False,
    "use_additional_t_cond": False,
    "use_layer3d_rope": False,
}


def pack_latents(latents):
    """(B, C, H, W) -> (B, (H/2)(W/2), 4C), as QwenImagePipeline._pack_latents
    lays the transformer's tokens out."""
    b, c, h, w = latents.shape
    return latents.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // 2) * (w // 2), c * 4)


def unpack_latents(tokens, h, w):
    """The inverse of pack_latents (QwenImagePipeline._unpack_latents, one
    frame): (B, (H/2)(W/2), 4C) -> (B, C, H, W)."""
    b, _, channels = tokens.shape
    return tokens.view(b, h // 2, w // 2, channels // 4, 2, 2).permute(0, 3, 1, 4, 2, 5).reshape(b, channels // 4, h, w)


def qwen_image_transformer(args):
    module = importlib.import_module("diffusers.models.transformers.transformer_qwenimage")
    model = module.QwenImageTransformer2DModel(**QWEN_IMAGE_TRANSFORMER_CONFIG).eval()
    seed_weights(model, 401)
    g = Golden(
        "qwen_image_transformer",
        reference_of("huggingface/diffusers", args.diffusers_commit, args.diffusers, module.__file__,
                     "QwenImageTransformer2DModel"),
        QWEN_IMAGE_TRANSFORMER_CONFIG,
    )
    g.weights(model.state_dict())
    gen = torch.Generator().manual_seed(402)
    # Cases: (latent shape, reference latent shapes, timesteps (the model's
    # t, the pipeline's sigma: t / 1000), text length, valid rows per item).
    # "single": one item, 2x3 patches, 7 text tokens all valid.
    # "masked_batch": two items, 3x2 patches, 9 text tokens of which 5 and 9
    # are valid (the first item's padding keys masked).
    # "edit": one item, 2x2 patches and a reference latent of 3x4 patches
    # (frame 1 of the RoPE; the output covers the noisy latent's tokens
    # only, as the edit pipelines slice it), 6 text tokens of which 4 valid.
    cases = {
        "single": ((1, 16, 4, 6), [], [0.6], 7, [list(range(7))]),
        "masked_batch": ((2, 16, 6, 4), [], [0.25, 0.9], 9, [list(range(5)), list(range(9))]),
        "edit": ((1, 16, 4, 4), [(1, 16, 6, 8)], [0.5], 6, [list(range(4))]),
    }
    for case, (shape, ref_shapes, timesteps, length, valid) in cases.items():
        b, _, h, w = shape
        latents = torch.randn(shape, generator=gen)
        references = [torch.randn(s, generator=gen) for s in ref_shapes]
        text = torch.randn((b, length, 64), generator=gen)
        mask = torch.zeros((b, length), dtype=torch.bool)
        for i, rows in enumerate(valid):
            mask[i, rows] = True
        t = torch.tensor(timesteps, dtype=torch.float32)
        tokens = torch.cat([pack_latents(x) for x in [latents] + references], dim=1)
        img_shapes = [[(1, x.shape[2] // 2, x.shape[3] // 2) for x in [latents] + references]] * b
        with torch.no_grad():
            out = model(
                hidden_states=tokens,
                encoder_hidden_states=text,
                encoder_hidden_states_mask=mask,
                timestep=t,
                img_shapes=img_shapes,
                return_dict=False,
            )[0]
        sample = unpack_latents(out[:, : (h // 2) * (w // 2)], h, w)
        for name, value in (("latents", latents), ("timestep", t), ("text", text), ("text_mask", mask)):
            g.input(case, name, value)
        for j, r in enumerate(references):
            g.input(case, f"reference.{j}", r)
        g.output(case, "sample", sample)
        sane(f"{case}.sample", sample)
        if case == "masked_batch":
            n = len(valid[0])

            def run(tokens_text, tokens_mask):
                with torch.no_grad():
                    o = model(hidden_states=tokens[:1], encoder_hidden_states=tokens_text,
                              encoder_hidden_states_mask=tokens_mask, timestep=t[:1], img_shapes=img_shapes[:1],
                              return_dict=False)[0]
                return unpack_latents(o, h, w)

            agree("masked_batch item 0 = its valid text alone", run(text[:1, :n], mask[:1, :n]), sample[:1])
            agree("masked_batch item 0 with its padding unmasked", run(text[:1], torch.ones_like(mask[:1])),
                  sample[:1], same=False)
    return g

# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

BUILDERS = {
    "zimage_transformer": zimage_transformer,
    "zimage_qwen3_text_encoder": qwen3_text_encoder,
    "zimage_flux_vae": flux_vae,
    "qwen_image_transformer": qwen_image_transformer,
    "qwen25vl_text_encoder": qwen25vl_text_encoder,
    "qwen_image_vae": qwen_image_vae,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diffusers", required=True, help="a diffusers checkout's src/")
    parser.add_argument("--diffusers-commit", required=True)
    parser.add_argument("--transformers", help="a directory holding transformers/models/...")
    parser.add_argument("--transformers-commit", help="the commit of modeling_qwen3.py")
    parser.add_argument("--transformers-qwen25vl-commit",
                        help="the commit of modeling_qwen2_5_vl.py (default: --transformers-commit)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--only", nargs="*", choices=sorted(BUILDERS))
    parser.add_argument("--half-weights", action="store_true",
                        help="weights rounded to float16 values and stored as F16 (half the bytes)")
    args = parser.parse_args()
    global HALF_WEIGHTS
    HALF_WEIGHTS = args.half_weights
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    install_diffusers(args.diffusers)
    if args.transformers:
        install_transformers(args.transformers)
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or BUILDERS:
        print(name)
        g = BUILDERS[name](args)
        path, size = g.write(args.out)
        print(f"  wrote {os.path.relpath(path)} ({size} bytes)")


if __name__ == "__main__":
    main()
