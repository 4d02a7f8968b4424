"""Benchmarks as typed records, by name: `load_dataset("metaqa-2hop", split="test", limit=200)`.

Real copies are read from `settings.data_dir()` (fetch them with `kgrag data fetch NAME`);
`sample-*` names are generated on first use in the same file formats. See data/README.md.
"""

from .answerable import answerable_flags, compute_answerable, normalize_name
from .items import (ChainStep, Dataset, KGQuestion, KinshipRules, KinshipStory, Passage,
                      PassageQuestion)
from .registry import (dataset_names, get_spec, list_datasets, load_dataset, load_pq_file, register_dataset,
                       sample_items)
from .spec import DatasetSpec
from .traits import DatasetTraits

__all__ = [
    "ChainStep", "Dataset", "KGQuestion", "KinshipRules", "KinshipStory", "Passage", "PassageQuestion",
    "load_dataset", "list_datasets", "dataset_names", "get_spec", "load_pq_file", "sample_items",
    "compute_answerable", "answerable_flags", "normalize_name", "register_dataset", "DatasetSpec", "DatasetTraits",
]
