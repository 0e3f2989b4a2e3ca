"""Running connectors from schedulers: Airflow DAGs (`dags/`) and Databricks job definitions.

`specs` and `databricks` use the standard library only (plus deltalake, when the config store is read), so a
DAG file can import them in the DAG processor without Spark; `airflow_dags` needs `apache-airflow` (extra
`airflow`). Every connector run happens in a `python -m ingest` process, never in the scheduler's.
"""
