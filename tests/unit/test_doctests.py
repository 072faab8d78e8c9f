"""The examples in the public docstrings run as written."""

import doctest

import event_patterns
import inferbus_lambda.claims.memory
import inferbus_lambda.consumer
import inferbus_lambda.contracts.core
import inferbus_lambda.detection
import inferbus_lambda.entities
import inferbus_lambda.environment
import inferbus_lambda.errors
import inferbus_lambda.parallel
import inferbus_lambda.publishing
import inferbus_lambda.sources.base
import inferbus_lambda.tagging
import inferbus_lambda.text
import inferbus_lambda.words
import pytest

import inferbus.chaos.rates
import inferbus.model
import inferbus.model.declarations
import inferbus.model.demo
import inferbus.model.names
import inferbus.model.settings
import inferbus.runtime.bridge
import inferbus.runtime.pipes
import infra.configuration
import pipeline

MODULES = [inferbus_lambda.contracts.core, inferbus_lambda.entities, inferbus_lambda.environment, inferbus_lambda.errors,
           inferbus_lambda.claims.memory, event_patterns, inferbus_lambda.publishing, inferbus_lambda.text,
           inferbus_lambda.detection, inferbus_lambda.parallel, infra.configuration, inferbus.model, inferbus.model.declarations, inferbus.model.demo,
           inferbus.model.names, inferbus.model.settings, pipeline, inferbus.runtime.bridge, inferbus.chaos.rates,
           inferbus_lambda.sources.base, inferbus_lambda.consumer, inferbus.runtime.pipes, inferbus_lambda.tagging, inferbus_lambda.words]


@pytest.mark.parametrize("module", MODULES, ids=[module.__name__ for module in MODULES])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.failed == 0, module.__name__
    assert result.attempted >= 1, f"{module.__name__} has no runnable example"
