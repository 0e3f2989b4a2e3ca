"""Kafka Connect's REST API over the lake's state tables (`lakeconnect rest`).

`app` answers requests (method, path, query, body → status and JSON) with the Worker's operations;
`server` puts it on HTTP with optional basic authentication. Runs are not started here: Airflow or the
CLI runs connectors, as configs and target states in the lake tell them.
"""
