"""`llm-reader`: a local causal language model (transformers AutoModelForCausalLM) as a VQA reader.

Nothing is downloaded: hparam `model` names a folder saved with `save_pretrained`. Default mode
"loglik" scores each option letter's log-likelihood (no parsing); "generate" decodes and parses
strictly, counting unparseable answers wrong (`_vqa.llm`). A multimodal reader plugin subclasses
`LLMReader` and its model class (docs/pathoargus.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, TaskModel
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA


class LLMReader(Generator):
    """A causal LM from a local folder answering each closed question (text only by default)."""

    name: ClassVar[str] = "llm-reader"
    description: ClassVar[str] = ("VQA reader: a local causal LM scoring each option letter's log-likelihood "
                                  "(or generating, strictly parsed); no hub access")
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    default_hparams: ClassVar[dict[str, Any]] = {
        "model": None,  # local folder of a transformers causal LM and its tokenizer
        "mode": "loglik",  # "loglik" | "generate"
        "max_new_tokens": 8,
        "chat_template": "auto",  # "auto": the tokenizer's chat template when it has one; "none": plain prompt
        "system_prompt": None,
        "dtype": "auto",  # "auto" | "float32" | "bfloat16" | "float16"
    }
    needs_fit: ClassVar[bool] = False
    default_max_tiles: ClassVar[int | None] = None

    def model_class(self) -> type:
        """The TaskModel class; a multimodal reader returns its subclass of `LLMReaderModel`."""
        from pathkit_generators._vqa.llm import LLMReaderModel

        return LLMReaderModel

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._vqa.llm import load_local_model

        hp = self.hparams(spec.hparams)
        tokenizer, model = load_local_model(hp["model"], str(hp["dtype"]))
        return self.model_class()(tokenizer, model, mode=str(hp["mode"]), max_new_tokens=int(hp["max_new_tokens"]),
                                  chat_template=str(hp["chat_template"]), system_prompt=hp["system_prompt"])


@hookimpl
def register_generators(register):
    register(LLMReader)
