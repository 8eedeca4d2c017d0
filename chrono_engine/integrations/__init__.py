"""Adapters for the RAG frameworks users already run (docs/integrations.md).

- :mod:`chrono_engine.integrations.langchain` (extra ``[langchain]``, langchain-core 1.x,
  Python ≥ 3.11): :class:`ChronoRetriever` over an :class:`~chrono_engine.Engine`, and
  :class:`ChronoRerankRetriever`, which rescores any vector store's or retriever's
  candidates by validity (the temporal replacement of ``TimeWeightedVectorStoreRetriever``,
  whose formula is offered as :func:`time_weighted_policy`);
- :mod:`chrono_engine.integrations.llama_index` (extra ``[llama-index]``, llama-index-core
  0.14): :class:`ChronoRetriever` and the node postprocessor :class:`ChronoPostprocessor`.

Each module imports its framework when it is imported; a missing one raises
:class:`~chrono_engine.errors.MissingDependencyError` naming the extra. The pieces both
share (hits as records, rescoring of candidates) are in :mod:`._common`.
"""
