"""Statistical answers for any model: sequential tests whose verdicts are wrong with probability at
most delta (`sequential`), and compiled kernels that draw points in boxes (`compiled`)."""
