"""The core module: seeded tables, the forward pass, its trace, and its errors."""

from __future__ import annotations

import json

import pytest
import torch
from support.helpers import expect_error, make_runner
from torch import nn

from embedcli import EmbedConfig, InputEmbedding, build_embedding
from embedcli.cli import app
from embedcli.errors import ConfigError, SequenceTooLongError, TokenIdError

TINY = EmbedConfig(vocab_size=50, d_model=6, context_length=8, seed=7)


def plain_recipe(vocab: int, d: int, context: int, seed: int) -> tuple[nn.Embedding, nn.Embedding]:
    """The tutorial recipe the core must reproduce exactly."""
    torch.manual_seed(seed)
    token = nn.Embedding(vocab, d)
    position = nn.Embedding(context, d)
    return token, position


def test_book_chapter_2_values() -> None:
    """torch.manual_seed(123); nn.Embedding(6, 3): weights printed in the LLM-from-scratch book."""
    module = build_embedding(EmbedConfig(vocab_size=6, d_model=3, context_length=4, seed=123))
    expected = torch.tensor(
        [
            [0.3374, -0.1778, -0.1690],
            [0.9178, 1.5810, 1.3010],
            [1.2753, -0.2010, -0.1606],
            [-0.4015, 0.9666, -1.1481],
            [-1.1589, 0.3255, -0.6315],
            [-2.8400, -0.7849, -1.4096],
        ]
    )
    torch.testing.assert_close(module.token_embedding.weight.detach(), expected, atol=5e-5, rtol=0)


@pytest.mark.parametrize(
    ("vocab", "d", "context", "seed"), [(50257, 256, 4, 123), (100, 8, 16, 0), (7, 3, 5, 2**64 - 1)]
)
def test_tables_equal_the_plain_recipe_value_for_value(vocab, d, context, seed) -> None:
    token, position = plain_recipe(vocab, d, context, seed)
    module = build_embedding(
        EmbedConfig(vocab_size=vocab, d_model=d, context_length=context, seed=seed)
    )
    assert torch.equal(module.token_embedding.weight, token.weight)
    assert torch.equal(module.position_embedding.weight, position.weight)


def test_forward_equals_the_plain_recipe() -> None:
    token, position = plain_recipe(50257, 256, 4, 123)
    ids = torch.tensor([[40, 367, 2885, 1464], [1807, 3619, 402, 271]])
    expected = token(ids) + position(torch.arange(4))
    module = build_embedding(EmbedConfig(vocab_size=50257, d_model=256, context_length=4, seed=123))
    out = module(ids)
    assert out.shape == (2, 4, 256)
    assert torch.equal(out, expected)


def test_positional_none_has_no_table_and_same_token_table() -> None:
    learned = build_embedding(TINY)
    none = build_embedding(EmbedConfig(**{**TINY.to_dict(), "positional": "none"}))
    assert none.position_embedding is None
    assert torch.equal(none.token_embedding.weight, learned.token_embedding.weight)
    ids = torch.tensor([[1, 2, 3]])
    trace = none.trace(ids)
    assert trace.position_embeddings is None and trace.position_ids is None
    assert torch.equal(trace.input_embeddings, learned.token_embedding(ids))
    assert [s.name for s in trace.steps] == ["input_ids", "token_embeddings", "input_embeddings"]


def test_seeding_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(99)
    expected = torch.rand(3)
    torch.manual_seed(99)
    build_embedding(TINY)
    assert torch.equal(torch.rand(3), expected)


def test_trace_describes_the_real_tensors() -> None:
    module = build_embedding(TINY)
    trace = module.trace(torch.tensor([[1, 2, 3], [4, 5, 6]]))
    steps = {s.name: s for s in trace.steps}
    assert [s.name for s in trace.steps] == [
        "input_ids",
        "token_embeddings",
        "position_ids",
        "position_embeddings",
        "input_embeddings",
    ]
    for step in trace.steps:
        tensor = getattr(trace, step.name)
        assert step.shape == tuple(tensor.shape)
        assert step.dtype == str(tensor.dtype).removeprefix("torch.")
        assert step.device == str(tensor.device)
    assert steps["input_ids"].shape == (2, 3)
    assert steps["token_embeddings"].shape == (2, 3, 6)
    assert steps["position_ids"].shape == (3,)
    assert steps["position_embeddings"].shape == (3, 6)
    assert steps["input_embeddings"].shape == (2, 3, 6)
    assert torch.equal(trace.position_ids, torch.arange(3))


def test_one_dimensional_ids_are_a_batch_of_one() -> None:
    module = build_embedding(TINY)
    assert module(torch.tensor([1, 2])).shape == (1, 2, 6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dtype_is_a_cast_of_the_float32_tables(dtype: str) -> None:
    full = build_embedding(TINY)
    half = build_embedding(EmbedConfig(**{**TINY.to_dict(), "dtype": dtype}))
    target = getattr(torch, dtype)
    assert half.token_embedding.weight.dtype == target
    assert torch.equal(half.token_embedding.weight, full.token_embedding.weight.to(target))
    ids = torch.tensor([[3, 1, 4]])
    out = half(ids)
    assert out.dtype == target
    expected = (
        full.token_embedding.weight.to(target)[ids] + full.position_embedding.weight.to(target)[:3]
    )
    assert torch.equal(out, expected)
    assert half.position_ids.dtype == torch.long  # integer buffers are not cast


def test_position_ids_follow_the_module() -> None:
    module = build_embedding(TINY)
    assert "position_ids" not in module.state_dict()
    module.to("meta")
    assert module.position_ids.device.type == "meta"
    assert module.token_embedding.weight.device.type == "meta"


def test_meta_build_allocates_nothing_and_traces_shapes() -> None:
    config = EmbedConfig(vocab_size=50257, d_model=12288, context_length=2048)  # GPT-3 sized
    module = build_embedding(config, "meta")
    assert module.token_embedding.weight.is_meta
    trace = module.trace(torch.zeros(8, 4, dtype=torch.long, device="meta"))
    assert trace.input_embeddings.shape == (8, 4, 12288)
    assert trace.steps[-1].device == "meta"


def test_state_dict_holds_only_the_two_tables() -> None:
    module = build_embedding(TINY)
    state = module.state_dict()
    assert set(state) == {"token_embedding.weight", "position_embedding.weight"}


def test_sequence_longer_than_context_is_a_domain_error() -> None:
    module = build_embedding(TINY)
    with pytest.raises(
        SequenceTooLongError, match=r"sequence length \(9\) exceeds the context length \(8\)"
    ):
        module(torch.zeros(1, 9, dtype=torch.long))


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (
            [[1, 50]],
            r"token id 50 \(sequence 0, position 1\) is out of range for a vocabulary of 50",
        ),
        ([[1, 2], [3, -4]], r"token id -4 \(sequence 1, position 1\) is negative"),
    ],
)
def test_bad_ids_are_domain_errors(ids, message) -> None:
    with pytest.raises(TokenIdError, match=message):
        build_embedding(TINY)(torch.tensor(ids))


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (torch.tensor([[0.0, 1.0]]), "must be integers"),
        (torch.zeros(1, 2, 3, dtype=torch.long), r"shape \(B, T\) or \(T,\)"),
    ],
)
def test_malformed_ids(ids, message) -> None:
    with pytest.raises(TokenIdError, match=message):
        build_embedding(TINY)(ids)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("vocab_size", 0, "vocab_size must be a positive integer"),
        ("d_model", -1, "d_model must be a positive integer"),
        ("context_length", 2.5, "context_length must be a positive integer"),
        ("positional", "rotary", "unknown positional family 'rotary'"),
        ("dtype", "int8", "unknown dtype 'int8'"),
        ("seed", -1, r"seed must be an integer from 0 to 2\*\*64 - 1, got -1"),
        ("seed", 2**64, r"seed must be an integer from 0 to 2\*\*64 - 1"),
    ],
)
def test_config_validation(field, value, message) -> None:
    with pytest.raises(ConfigError, match=message):
        EmbedConfig(**{field: value})


def test_config_parameter_count() -> None:
    assert EmbedConfig().num_parameters == (50257 + 1024) * 768
    assert EmbedConfig(positional="none").num_parameters == 50257 * 768


def test_module_class_is_reusable_directly() -> None:
    module = InputEmbedding(TINY)
    assert module.token_embedding.weight.device.type == "cpu"
    assert module.token_embedding.weight.dtype == torch.float32


runner = make_runner()


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


@pytest.mark.parametrize(
    ("args", "steps"),
    [
        (["--preset", "bert-base"], {"token_type_embeddings", "embedding_layernorm"}),
        (["--preset", "bloom-176b", "-d", "64"], {"embedding_layernorm"}),
    ],
)
def test_a_presets_other_tensors_are_seeded_on_a_real_device(args: list[str], steps: set) -> None:
    result = run("inspect-shapes", *args, "--device", "cpu", "--json")
    assert result.exit_code == 0, result.output
    names = {t["name"] for t in json.loads(result.stdout)["tensors"]}
    assert steps <= names


def test_seeded_extras_are_torchs_initialisation_after_the_tables() -> None:
    from embedcli.core.config import EmbedConfig
    from embedcli.core.embedding import InputEmbedding

    config = EmbedConfig(vocab_size=10, d_model=4, context_length=3, token_types=True,
                         norm_eps=1e-5)  # fmt: skip
    module = InputEmbedding(config)
    torch.manual_seed(config.seed)
    token, position = torch.nn.Embedding(10, 4), torch.nn.Embedding(3, 4)
    types = torch.nn.Embedding(1, 4)
    assert torch.equal(module.token_embedding.weight, token.weight)
    assert torch.equal(module.position_embedding.weight, position.weight)
    assert torch.equal(module.token_type_embedding.weight, types.weight)
    assert torch.equal(module.norm_weight, torch.ones(4))
    assert torch.equal(module.norm_bias, torch.zeros(4))


def test_seeded_tables_that_would_take_most_of_the_memory_are_refused(monkeypatch) -> None:
    import embedcli.core.memory as memory

    monkeypatch.setattr(memory, "host_available_memory", lambda: 16 * 2**30)
    result = run("inspect-shapes", "--preset", "bloom-176b", "--device", "cpu")
    expect_error(result, "more than 75% of the 16.0 GiB available on this machine", 1)
