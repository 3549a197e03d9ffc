"""NLG scorers behind the `nlg` metric: BLEU, ROUGE-L and CIDEr in numpy, METEOR 1.5 through its jar."""
