/**
 * The REST API (IAM / SigV4 authorization on every method) in front of the api Lambda:
 * POST /runs, GET /runs, GET /runs/{id}, DELETE /runs/{id}, GET /runs/{id}/results.
 * API Gateway validates what it can before the Lambda runs (a body with name and targets, the path
 * id), and answers bad bodies with 400 and the validator's message naming the field.
 *
 * Stage access logs (and execution logs) need the account/region's API Gateway CloudWatch Logs role,
 * an account-wide singleton (AWS::ApiGateway::Account): where none is set the stage fails to create
 * and the stack rolls back. This stack never sets it (that would take over every other API's logging
 * in the account, and `cdk destroy` would leave or break it), so access logs are opt-in
 * (`apiAccessLogs`) for accounts that have the role; by default the stack deploys anywhere.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

export interface BenchfleetApiProps {
  readonly handler: lambda.IFunction;
  readonly throttleRateLimit: number;
  readonly throttleBurstLimit: number;
  /** Write stage access logs: the account must already have API Gateway's CloudWatch Logs role. */
  readonly accessLogs: boolean;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly stageName?: string;
}

/** The least a comparison spec must have for the API to pass it on; plan validates the rest. */
export const RUN_REQUEST_SCHEMA: apigw.JsonSchema = {
  schema: apigw.JsonSchemaVersion.DRAFT4,
  title: 'ComparisonSpec',
  type: apigw.JsonSchemaType.OBJECT,
  required: ['name', 'targets'],
  properties: {
    name: { type: apigw.JsonSchemaType.STRING, minLength: 1, maxLength: 128 },
    targets: {
      type: apigw.JsonSchemaType.ARRAY,
      minItems: 1,
      items: {
        type: apigw.JsonSchemaType.OBJECT,
        required: ['id', 'kind'],
        properties: {
          id: { type: apigw.JsonSchemaType.STRING, pattern: '^[a-z0-9-]+$' },
          kind: { type: apigw.JsonSchemaType.STRING },
        },
      },
    },
  },
};

export class BenchfleetApi extends Construct {
  public readonly api: apigw.RestApi;
  public readonly accessLogs?: logs.LogGroup;

  constructor(scope: Construct, id: string, props: BenchfleetApiProps) {
    super(scope, id);
    if (props.accessLogs) {
      this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
        retention: props.logRetention,
        removalPolicy: props.removalPolicy,
      });
    }
    this.api = new apigw.RestApi(this, 'Api', {
      description: 'benchfleet: start, list, show, cancel benchmark runs and read their results',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: false,
      defaultMethodOptions: { authorizationType: apigw.AuthorizationType.IAM },
      deployOptions: {
        stageName: props.stageName ?? 'v1',
        ...(this.accessLogs === undefined
          ? {}
          : {
              accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogs),
              accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
            }),
        tracingEnabled: true,
        metricsEnabled: true,
        throttlingRateLimit: props.throttleRateLimit,
        throttlingBurstLimit: props.throttleBurstLimit,
      },
    });
    // Say which field is wrong instead of API Gateway's bare "Invalid request body".
    this.api.addGatewayResponse('BadRequestBody', {
      type: apigw.ResponseType.BAD_REQUEST_BODY,
      statusCode: '400',
      templates: {
        'application/json': '{"message": "$context.error.validationErrorString"}',
      },
    });
    this.api.addGatewayResponse('BadRequestParameters', {
      type: apigw.ResponseType.BAD_REQUEST_PARAMETERS,
      statusCode: '400',
      templates: { 'application/json': '{"message": "$context.error.validationErrorString"}' },
    });

    const bodyValidator = this.api.addRequestValidator('BodyValidator', {
      validateRequestBody: true,
      validateRequestParameters: true,
    });
    const paramsValidator = this.api.addRequestValidator('ParamsValidator', {
      validateRequestBody: false,
      validateRequestParameters: true,
    });
    const runModel = this.api.addModel('RunRequest', {
      contentType: 'application/json',
      schema: RUN_REQUEST_SCHEMA,
    });
    const integration = new apigw.LambdaIntegration(props.handler, { proxy: true });

    const runs = this.api.root.addResource('runs');
    runs.addMethod('POST', integration, {
      requestValidator: bodyValidator,
      requestModels: { 'application/json': runModel },
      // Becomes the execution name, so a retried POST never starts a second fleet.
      requestParameters: { 'method.request.header.Idempotency-Key': false },
    });
    runs.addMethod('GET', integration, {
      requestValidator: paramsValidator,
      requestParameters: { 'method.request.querystring.next_token': false },
    });
    const run = runs.addResource('{id}');
    const idParam = { 'method.request.path.id': true };
    run.addMethod('GET', integration, { requestValidator: paramsValidator, requestParameters: idParam });
    run.addMethod('DELETE', integration, { requestValidator: paramsValidator, requestParameters: idParam });
    run.addResource('results').addMethod('GET', integration, {
      requestValidator: paramsValidator,
      requestParameters: { ...idParam, 'method.request.querystring.format': false },
    });

    NagSuppressions.addResourceSuppressions(
      this.api,
      [
        {
          id: 'AwsSolutions-APIG3',
          reason:
            'Every method requires SigV4 (IAM) and the stage is throttled; a WAF web ACL adds a monthly ' +
            'fee per API that a single-team benchmark service does not need.',
        },
        {
          id: 'AwsSolutions-APIG6',
          reason:
            'Execution logging needs the account-wide API Gateway CloudWatch role, which this stack ' +
            'must not own or delete; X-Ray traces (sampled) and stage metrics (requests, 4xx, 5xx, ' +
            'latency) are on.',
        },
        ...(this.accessLogs === undefined
          ? [
              {
                id: 'AwsSolutions-APIG1',
                reason:
                  'Access logs need the account-wide API Gateway CloudWatch role, which a fresh ' +
                  'account lacks (the stage would fail to create); opt in with -c apiAccessLogs=true ' +
                  'where the role is set. X-Ray traces (sampled) and stage metrics are on.',
              },
            ]
          : []),
        {
          id: 'AwsSolutions-COG4',
          reason: 'Callers are IAM principals (CLI, scheduler, CI) authorized with SigV4, not Cognito users.',
        },
      ],
      true,
    );
  }

  public get url(): string {
    return this.api.url;
  }
}
