"""The examples in the public docstrings run as written."""

import doctest

import inferbus_lambda.contracts
import inferbus_lambda.publishing

import infra.settings


def test_docstring_examples_run():
    for module in (inferbus_lambda.contracts, inferbus_lambda.publishing, infra.settings):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
    assert doctest.testmod(inferbus_lambda.contracts).attempted >= 4
