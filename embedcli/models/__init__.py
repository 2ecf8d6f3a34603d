"""Where trained tables come from: checkpoint files, model folders, GGUF files, the Ollama store
and the Hugging Face hub.

- ``sources``: the one resolver: a ``--weights``/``-e`` string told once (``classify``, a
  ``Source``), then opened as one ``ModelSource`` (its checkpoint, config and folder).
- ``sample``: ``sample:NAME``, a trained model shipped as packages of chunks (the sample extra),
  joined once into the user cache and used only as its published SHA-256.
- ``protocols``: ``Checkpoint``, the interface every checkpoint class offers (a Protocol).
- ``formats``: formats told by content; tensors described from headers without reading them.
- ``checkpoint``: one file (safetensors, PyTorch with ``weights_only``, .npz), one tensor read
  at a time after its size is checked.
- ``config``: what a model's ``config.json`` says about its input layer, read through its family.
- ``positions``: a config's rope, ALiBi and relative-bucket fields.
- ``presets``: offline presets of real model families, read through their registry entries.
- ``keys``: ``TableKeys``, where a checkpoint keeps the input layer's tensors.
- ``familykeys``: where a known family keeps its input-layer tensors in a checkpoint.
- ``tables``: which tensors are the token and positional tables, and whether they fit the flags.
- ``inventory``: what a checkpoint holds (``embedcli weights``).
- ``hub/``: ``hf:ORG/NAME[@REV]``, offline first (its ``__init__`` lists its modules).
- ``gguf/``: GGUF files and the Ollama store (its ``__init__`` lists its modules).

Imports: families, core, io, errors.
"""
