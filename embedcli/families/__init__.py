"""The registry of model families: everything embedcli knows about each, in one place.

- ``registry``: ``Family`` (one frozen entry, keyword fields), ``register``, ``family_of``,
  ``family_of_gguf``, the refusal of an unknown ``model_type``, ``count_parameters``, the
  compatibility table; ``defaults.json``: transformers' defaults and aliases per model_type.
- ``params``: the vocabulary of the parameter formulas (a config's fields as its class reads
  them, each building block's parameters, the Llama-shaped decoder).
- one module per family group, each holding all of its families: table keys, the steps before
  the first block, the position rule, the parameter formula, the GGUF architectures, the
  presets: ``gpt2``, ``llama``, ``mistral``, ``qwen``, ``gemma``, ``phi``, ``olmo``,
  ``gptneox``, ``bloom``, ``opt``, ``falcon``, ``bert``, ``t5``, ``bart``, ``seq2seq``, ``mamba``,
  ``hybrid``, ``cohere``, ``granite``, ``deepseek``, ``glm``, ``hunyuan``, ``ernie``,
  ``modernbert``, ``ropemakers``, ``minimax``, ``normed``, ``exaone``, ``openai``, ``salesforce``,
  ``databricks``, ``multimodal``,
  ``encoders``, ``remote`` (families transformers has no class for, read from GGUF files).
- ``ggufarch``: ``GGUFArch``, how llama.cpp reads one GGUF architecture (an entry's ``gguf``).

Importing the package registers every group, in this order (the presets' order, and the
compatibility table's).

Imports: core, errors.
"""

# The order of registration is the order of this import.
# isort: off
from embedcli.families import (  # noqa: F401  (each module registers its families)
    gpt2,
    llama,
    mistral,
    qwen,
    gemma,
    phi,
    olmo,
    gptneox,
    bloom,
    opt,
    falcon,
    bert,
    t5,
    bart,
    seq2seq,
    mamba,
    hybrid,
    cohere,
    granite,
    deepseek,
    glm,
    hunyuan,
    ernie,
    modernbert,
    ropemakers,
    minimax,
    normed,
    multimodal,
    exaone,
    openai,
    salesforce,
    databricks,
    encoders,
    remote,
)
# isort: on
