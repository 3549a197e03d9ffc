"""A causal language model from a local folder as a VQA reader (transformers, no hub access).

The prompt follows SlideChat's closed-set form: the question, then one "A. choice" line per
choice, then an instruction to answer with the letter, in the tokenizer's chat template when it
has one (Qwen2.5-Instruct for SlideChat and PathoArgus). Two modes:

- "loglik" (default): the log-likelihood of each option letter as the answer's first token(s);
  the highest wins, so nothing has to be parsed;
- "generate": greedy decoding of at most `max_new_tokens`, read by the strict parser of
  `pathkit_tasks.vqa.task.parse_answer`; an unparseable answer is no answer (counted wrong) and
  is flagged `parse_failed`, which the `vqa` metric reports as the parse-failure rate.

Multimodal readers subclass `LLMReaderModel` and return, from `visual_embeddings(item)`, the
question's selected features projected into the model's input embedding space, (T, hidden);
they are spliced in where the prompt holds `IMAGE_TOKEN` (docs/pathoargus.md, "A multimodal
reader plugin"). The base reader is text-only and returns None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from pathkit_core.contracts import PathkitError
from pathkit_tasks.vqa.cases import LETTERS, parse_answer

IMAGE_TOKEN = "<image>"
INSTRUCTION = "Answer with the option's letter from the given choices directly."
MODES = ("loglik", "generate")


def load_local_model(folder: str | Path | None, dtype: str = "auto") -> tuple[Any, Any]:
    """(tokenizer, model) from a local folder only; a missing folder is an error, never a download."""
    if not folder:
        raise PathkitError("llm-reader needs hparam model=<folder> holding a transformers causal LM "
                           "(config.json, weights, tokenizer files); nothing is downloaded")
    path = Path(folder).expanduser()
    if not (path / "config.json").is_file():
        raise PathkitError(f"llm-reader: {path} is not a local transformers model folder (no config.json); "
                           "save one with model.save_pretrained(folder) and tokenizer.save_pretrained(folder)")
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - transformers is in the environment
        raise PathkitError(f"llm-reader needs `transformers` ({exc})") from exc
    dtypes = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in dtypes:
        raise PathkitError(f"llm-reader: dtype {dtype!r}; choose {', '.join(dtypes)}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=dtypes[dtype])
    except (OSError, ValueError) as exc:
        raise PathkitError(f"llm-reader: cannot load the model in {path}: {exc}") from exc
    return tokenizer, model.eval()


class LLMReaderModel(torch.nn.Module):
    """TaskModel over a local causal LM: one answer per question, by letter likelihood or generation."""

    def __init__(self, tokenizer: Any, model: Any, *, mode: str = "loglik", max_new_tokens: int = 8,
                 chat_template: str = "auto", system_prompt: str | None = None) -> None:
        super().__init__()
        if mode not in MODES:
            raise PathkitError(f"llm-reader: mode {mode!r}; choose {', '.join(MODES)}")
        if chat_template not in ("auto", "none"):
            raise PathkitError(f"llm-reader: chat_template {chat_template!r}; choose auto or none")
        self.tokenizer = tokenizer
        self.lm = model
        self.mode = mode
        self.max_new_tokens = int(max_new_tokens)
        self.use_chat = chat_template == "auto" and bool(getattr(tokenizer, "chat_template", None))
        self.system_prompt = system_prompt

    # ------------------------------------------------------------------ prompts

    def visual_embeddings(self, item: dict[str, Any]) -> torch.Tensor | None:
        """(T, hidden) embeddings of the question's evidence for a multimodal reader; None: text only."""
        return None

    def prompt(self, item: dict[str, Any], *, visual: bool) -> str:
        meta = item["meta"]
        lines = [IMAGE_TOKEN] if visual else []
        lines.append(str(meta["question"]).strip())
        lines.extend(f"{LETTERS[j]}. {choice}" for j, choice in enumerate(meta["choices"]))
        lines.append(INSTRUCTION)
        text = "\n".join(lines)
        if not self.use_chat:
            return f"{text}\nAnswer:"
        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else [])
        messages.append({"role": "user", "content": text})
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prompt_embeddings(self, item: dict[str, Any]) -> torch.Tensor:
        """(L, hidden) input embeddings of the prompt, the visual ones spliced in at IMAGE_TOKEN."""
        embed = self.lm.get_input_embeddings()
        device = embed.weight.device
        visual = self.visual_embeddings(item)
        text = self.prompt(item, visual=visual is not None)
        bos = [self.tokenizer.bos_token_id] if getattr(self.tokenizer, "bos_token_id", None) is not None \
            and not self.use_chat else []
        if visual is None:
            return embed(torch.tensor(bos + self._ids(text), device=device))
        before, _, after = text.partition(IMAGE_TOKEN)
        parts = [embed(torch.tensor(bos + self._ids(before), device=device, dtype=torch.long)),
                 visual.to(device=device, dtype=embed.weight.dtype),
                 embed(torch.tensor(self._ids(after), device=device, dtype=torch.long))]
        return torch.cat([p for p in parts if len(p)])

    # ------------------------------------------------------------------ TaskModel

    def collate(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return items

    def training_step(self, batch: Any) -> torch.Tensor:
        raise PathkitError("llm-reader is not trained by pathkit (it needs no fit)")

    def export_state(self) -> dict[str, Any]:
        return {}

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with torch.no_grad():
            return [self._loglik(item) if self.mode == "loglik" else self._generate(item) for item in batch]

    def _loglik(self, item: dict[str, Any]) -> dict[str, Any]:
        """Sum of log-probabilities of each option letter's tokens after the prompt."""
        embed = self.lm.get_input_embeddings()
        prompt = self._prompt_embeddings(item)
        lead = "" if self.use_chat else " "
        conts = [self._ids(f"{lead}{LETTERS[j]}") for j in range(len(item["meta"]["choices"]))]
        width = max(len(c) for c in conts)
        rows, masks = [], []
        for cont in conts:
            ids = torch.tensor(cont + [0] * (width - len(cont)), device=prompt.device)
            rows.append(torch.cat([prompt, embed(ids)]))
            masks.append(torch.tensor([1] * (len(prompt) + len(cont)) + [0] * (width - len(cont)),
                                      device=prompt.device))
        logits = self.lm(inputs_embeds=torch.stack(rows), attention_mask=torch.stack(masks)).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1)
        scores = []
        for k, cont in enumerate(conts):
            positions = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(cont), device=prompt.device)
            scores.append(float(logprobs[k, positions, torch.tensor(cont, device=prompt.device)].sum()))
        best = max(range(len(scores)), key=lambda j: scores[j])
        return {"answer": best, "scores": [round(s, 6) for s in scores], "mode": "loglik"}

    def _generate(self, item: dict[str, Any]) -> dict[str, Any]:
        prompt = self._prompt_embeddings(item)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        out = self.lm.generate(inputs_embeds=prompt[None], attention_mask=torch.ones(1, len(prompt), dtype=torch.long,
                                                                                     device=prompt.device),
                               max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad)
        response = self.tokenizer.decode(out[0], skip_special_tokens=True)
        answer = parse_answer(response, list(item["meta"]["choices"]))
        return {"answer": answer, "response": response, "parse_failed": answer is None, "mode": "generate"}
