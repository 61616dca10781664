"""The input stage: each question's inputs read and checked once, into a frozen request.

`faircert.api` is a facade over this package: each public function prepares a request here, runs
the engine the registry finds for it, and finishes the result here. Nothing below this package
reads a user's files or guesses at their meaning.
"""
