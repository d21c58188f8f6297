"""Choose the extractor from settings: the LLM one when a client is configured, else rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.ontology import ONTOLOGY, Ontology
from turngraph.settings import Settings
from workers.extraction.models import Extractor
from workers.extraction.offline import OfflineExtractor
from workers.extraction.stats import ExtractionStats

if TYPE_CHECKING:
    import openai


def build_extractor(
    settings: Settings,
    llm_client: openai.OpenAI | None,
    *,
    ontology: Ontology = ONTOLOGY,
    stats: ExtractionStats | None = None,
) -> Extractor:
    """The :class:`OfflineExtractor` when ``llm_client`` is None, else an
    :class:`~workers.extraction.llm.LLMExtractor` on ``settings.llm_model`` with
    ``settings.llm_concurrency`` parallel calls (``Clients.llm`` is the client)."""
    if llm_client is None:
        return OfflineExtractor(ontology)
    from workers.extraction.llm import LLMExtractor  # openai is only needed on this path

    return LLMExtractor(
        llm_client,
        model=settings.llm_model,
        ontology=ontology,
        stats=stats,
        concurrency=settings.llm_concurrency,
    )
