"""A real offline search environment (``search-v1``): a tantivy index over text that Debian
packages ship, with web_search / web_extractor / dict_memory tools and seeded tasks."""

from agentworld.envs.search.env import SearchEnv
from agentworld.envs.search.index import CorpusConfig, SearchEngine, build_corpus, corpus_ready, default_corpus_dir
from agentworld.envs.search.tasks import TEMPLATES, make_task
from agentworld.envs.search.tools import TOOLS, SearchTools

__all__ = ["TEMPLATES", "TOOLS", "CorpusConfig", "SearchEngine", "SearchEnv", "SearchTools", "build_corpus",
           "corpus_ready", "default_corpus_dir", "make_task"]
