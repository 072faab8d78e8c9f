import pytest

from inferbus.model.settings import ConsumerSettings, InferbusSettings, SettingsError


def test_defaults_are_valid_and_visibility_follows_the_timeout():
    consumer = ConsumerSettings()
    assert consumer.visibility_timeout_s == 6 * consumer.timeout_s + consumer.max_batching_window_s


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ConsumerSettings(batch_size=0), r"ConsumerSettings.batch_size must be in \[1, 10000\]"),
        (lambda: ConsumerSettings(max_concurrency=1), "max_concurrency"),
        (lambda: InferbusSettings(execution_failures=ConsumerSettings(batch_size=50, max_batching_window_s=0)),
         "needs max_batching_window_s >= 1"),
        (lambda: InferbusSettings(python_version="3.11"), "3.12 or newer"),
        (lambda: InferbusSettings(log_retention_days=31), "log_retention_days"),
    ],
)
def test_bad_settings_fail_early_naming_the_setting(make, message):
    with pytest.raises(SettingsError, match=message):
        make()
