"""What the multiple-choice VQA readers share: hashed text tokens, batches of questions, choice scoring."""
